//! Analyses of training traffic beyond the envelope: flows, traffic matrix, size/gap histograms,
//! ON/OFF bursts, iteration period and segmentation, superposition (filled in by the analysis work).
