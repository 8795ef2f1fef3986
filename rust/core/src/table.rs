//! Packets as columns: what `read_packets` hands to polars. Struct-of-arrays with a validity mask
//! for the fields a packet may lack, and addresses dictionary-encoded (a code per packet, the
//! distinct addresses once), so no per-packet object is ever created on the Python side.

use crate::capture::CaptureReader;
use crate::error::{Error, Result};
use crate::pipeline::Progress;
use crate::wire;
use std::net::IpAddr;

/// A column that may be null per row.
#[derive(Debug, Clone, Default)]
pub struct Nullable<T> {
    pub values: Vec<T>,
    pub valid: Vec<bool>,
}

impl<T: Copy + Default> Nullable<T> {
    fn push(&mut self, v: Option<T>) {
        self.values.push(v.unwrap_or_default());
        self.valid.push(v.is_some());
    }
}

/// Addresses as codes into `dictionary`; code u32::MAX is never used (validity says null).
#[derive(Debug, Clone, Default)]
pub struct AddressColumn {
    pub codes: Nullable<u32>,
    pub dictionary: Vec<IpAddr>,
    index: AddressIndex,
}

impl AddressColumn {
    #[inline]
    fn push(&mut self, a: Option<IpAddr>) {
        let code = a.map(|a| self.index.code(a, &mut self.dictionary));
        self.codes.push(code);
    }
}

/// Address -> code, open addressing with linear probing. A capture has few distinct addresses
/// and looks one up per packet and column, so the lookup is the cost: a folded multiply of the
/// address bits replaces SipHash, and a slot holds the address itself for the comparison. The
/// per-table random seed keeps a crafted capture from piling its addresses onto one probe chain.
#[derive(Debug, Clone)]
struct AddressIndex {
    /// (address, code); `None` is an empty slot. Length a power of two, at most half full.
    slots: Vec<Option<(IpAddr, u32)>>,
    seed: u64,
}

impl Default for AddressIndex {
    fn default() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        AddressIndex {
            slots: Vec::new(),
            seed,
        }
    }
}

#[inline(always)]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

impl AddressIndex {
    #[inline]
    fn slot(&self, a: &IpAddr) -> usize {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let x = match a {
            IpAddr::V4(v4) => u64::from(u32::from(*v4)),
            IpAddr::V6(v6) => {
                let bits = u128::from(*v6);
                folded_multiply(bits as u64 ^ self.seed, ((bits >> 64) as u64) ^ K)
            }
        };
        folded_multiply(x ^ self.seed, K) as usize & (self.slots.len() - 1)
    }

    /// The code of `a`, appending it to `dictionary` the first time it is seen.
    #[inline]
    fn code(&mut self, a: IpAddr, dictionary: &mut Vec<IpAddr>) -> u32 {
        if dictionary.len() * 2 >= self.slots.len() {
            self.grow(dictionary);
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(&a);
        loop {
            match self.slots[i] {
                Some((b, code)) if b == a => return code,
                Some(_) => i = (i + 1) & mask,
                None => {
                    let code = dictionary.len() as u32;
                    dictionary.push(a);
                    self.slots[i] = Some((a, code));
                    return code;
                }
            }
        }
    }

    #[cold]
    fn grow(&mut self, dictionary: &[IpAddr]) {
        let len = (self.slots.len() * 2).max(64);
        self.slots = vec![None; len];
        let mask = len - 1;
        for (code, a) in dictionary.iter().enumerate() {
            let mut i = self.slot(a);
            while self.slots[i].is_some() {
                i = (i + 1) & mask;
            }
            self.slots[i] = Some((*a, code as u32));
        }
    }
}

/// The columns a caller may ask for.
pub const ALL_COLUMNS: &[&str] = &[
    "timestamp",
    "interface",
    "wire_len",
    "cap_len",
    "linktype",
    "src",
    "dst",
    "protocol",
    "sport",
    "dport",
    "vlan",
    "qp",
    "ip_len",
    "payload_len",
    "tcp_flags",
];

#[derive(Debug, Clone, Default)]
pub struct PacketTable {
    pub columns: Vec<String>,
    pub timestamp: Nullable<i64>,
    pub interface: Vec<u32>,
    pub wire_len: Vec<u32>,
    pub cap_len: Vec<u32>,
    pub linktype: Vec<u16>,
    pub src: AddressColumn,
    pub dst: AddressColumn,
    pub protocol: Nullable<u8>,
    pub sport: Nullable<u16>,
    pub dport: Nullable<u16>,
    pub vlan: Nullable<u16>,
    pub qp: Nullable<u32>,
    pub ip_len: Nullable<u32>,
    pub payload_len: Nullable<u32>,
    pub tcp_flags: Nullable<u8>,
}

struct Wanted {
    ts: bool,
    iface: bool,
    wire: bool,
    cap: bool,
    link: bool,
    headers: bool,
}

impl PacketTable {
    pub fn wants(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c == name)
    }
}

/// Read a whole capture into columns. `columns` = None means all of them.
pub fn read_table(
    reader: &mut CaptureReader,
    columns: Option<&[String]>,
    progress: Progress<'_>,
) -> Result<PacketTable> {
    let cols: Vec<String> = match columns {
        None => ALL_COLUMNS.iter().map(|s| s.to_string()).collect(),
        Some(c) => {
            for name in c {
                if !ALL_COLUMNS.contains(&name.as_str()) {
                    return Err(Error::invalid(format!(
                        "unknown column {name:?}; the columns are: {}",
                        ALL_COLUMNS.join(", ")
                    )));
                }
            }
            c.to_vec()
        }
    };
    let mut t = PacketTable {
        columns: cols,
        ..Default::default()
    };
    let w = Wanted {
        ts: t.wants("timestamp"),
        iface: t.wants("interface"),
        wire: t.wants("wire_len"),
        cap: t.wants("cap_len"),
        link: t.wants("linktype"),
        headers: ALL_COLUMNS[5..].iter().any(|c| t.wants(c)),
    };
    let mut n = 0u64;
    while let Some(p) = reader.next_packet()? {
        if w.ts {
            t.timestamp.push(p.ts_ns);
        }
        if w.iface {
            t.interface.push(p.interface);
        }
        if w.wire {
            t.wire_len.push(p.wire_len);
        }
        if w.cap {
            t.cap_len.push(p.data.len() as u32);
        }
        if w.link {
            t.linktype.push(p.linktype);
        }
        if w.headers {
            let h = wire::decode(p.linktype, p.data);
            t.src.push(h.src);
            t.dst.push(h.dst);
            t.protocol.push(h.ip_proto);
            t.sport.push(h.sport);
            t.dport.push(h.dport);
            t.vlan.push(h.vlan);
            t.qp.push(h.roce_qp);
            t.ip_len.push(h.ip_len);
            t.payload_len.push(h.payload_len);
            t.tcp_flags.push(h.tcp_flags);
        }
        n += 1;
        if n % (1 << 16) == 0 {
            progress(reader.position())?;
        }
    }
    Ok(t)
}
