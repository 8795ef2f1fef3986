//! From a capture to the engine: decode what the scan needs, choose each packet's size, and account
//! for every packet (counted, or skipped with a reason).
