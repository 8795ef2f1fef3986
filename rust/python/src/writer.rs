//! The core's pcap/pcapng writer for Python (tests, benchmarks, tools): builds a capture in memory.

use crate::errors::to_py;
use burstcore::capture::{ByteOrder, InterfaceStats, TsResolution};
use burstcore::writer::{check_string_option, PcapNgWriter, PcapOptions, PcapWriter};
use burstcore::Error;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::marker::PhantomData;
use std::net::IpAddr;

/// An integer argument that goes into a fixed-width field of the capture. It is checked against
/// the field by [`named!`], where the argument's name is known: pyo3 names the argument in a
/// TypeError only, and its own OverflowError ("out of range integral type conversion attempted")
/// names neither the value nor what fits. A non-integer is still refused at extraction, as a
/// TypeError that pyo3 names.
pub struct Field<T> {
    /// The value, or how to show it when it is beyond even i128.
    value: Result<i128, String>,
    width: PhantomData<T>,
}

impl<T> Field<T> {
    /// A default of a signature.
    const fn of(v: i128) -> Self {
        Field {
            value: Ok(v),
            width: PhantomData,
        }
    }
}

/// The fields' integer types and how a user reads their range.
trait Width: TryFrom<i128> + Copy {
    const RANGE: (i128, i128);
    const WHAT: &'static str;
}

macro_rules! width {
    ($($t:ty: $what:literal),*) => {$(
        impl Width for $t {
            const RANGE: (i128, i128) = (<$t>::MIN as i128, <$t>::MAX as i128);
            const WHAT: &'static str = $what;
        }
    )*};
}
width!(u8: "an 8-bit unsigned field", u16: "a 16-bit unsigned field", u32: "a 32-bit unsigned field",
       u64: "a 64-bit unsigned field", i64: "a 64-bit signed field");

impl<'a, 'py, T> FromPyObject<'a, 'py> for Field<T> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let value = match obj.extract::<i128>() {
            Ok(v) => Ok(v),
            // Past 4300 digits Python's str() refuses (and Display printed an "unraisable" error).
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Err(match obj.str() {
                Ok(s) => s.to_string(),
                Err(_) => format!("<an integer of {} bits>", obj.call_method0("bit_length")?),
            }),
            Err(e) => return Err(e),
        };
        Ok(Field {
            value,
            width: PhantomData,
        })
    }
}

/// A string argument written as a pcapng string option. A `str` that UTF-8 cannot encode (a lone
/// surrogate) is refused by [`named!`], naming the argument, where `&str`'s extraction raised
/// a UnicodeEncodeError that did not say which argument.
pub struct Text(Result<String, String>);

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let s = obj.cast::<PyString>()?;
        let text = match s.to_str() {
            Ok(t) => Ok(t.to_owned()),
            Err(e) => {
                let at = e.value(obj.py()).getattr("start")?;
                Err(format!(
                    "{} has a lone surrogate at index {at}",
                    obj.repr()?
                ))
            }
        };
        Ok(Text(text))
    }
}

/// An argument that is checked once its name is known.
trait Named {
    type Value;
    fn named(self, name: &str) -> PyResult<Self::Value>;
}

impl<T: Width> Named for Field<T> {
    type Value = T;

    fn named(self, name: &str) -> PyResult<T> {
        let (lo, hi) = T::RANGE;
        let text = match self.value {
            Ok(v) => match T::try_from(v) {
                Ok(t) => return Ok(t),
                Err(_) => v.to_string(),
            },
            Err(text) => text,
        };
        Err(PyOverflowError::new_err(format!(
            "{name}={text} does not fit {}: give {lo} to {hi}",
            T::WHAT
        )))
    }
}

impl Named for Text {
    type Value = String;

    fn named(self, name: &str) -> PyResult<String> {
        self.0.map_err(|e| {
            to_py(Error::invalid(format!(
                "{name}={e}, which UTF-8 (pcapng's strings) cannot encode: leave it out"
            )))
        })
    }
}

impl<N: Named> Named for Option<N> {
    type Value = Option<N::Value>;

    fn named(self, name: &str) -> PyResult<Self::Value> {
        self.map(|n| n.named(name)).transpose()
    }
}

/// Check each of a method's [`Field`] and [`Text`] arguments (or `Option`s of them) under its own
/// name, and rebind it to its value.
macro_rules! named {
    ($($arg:ident),+ $(,)?) => {
        $(let $arg = Named::named($arg, stringify!($arg))?;)+
    };
}

enum Inner {
    Pcap(PcapWriter<Vec<u8>>),
    PcapNg(PcapNgWriter<Vec<u8>>),
    Finished(Vec<u8>),
}

/// Write a pcap or pcapng capture block by block, into memory; `getvalue()` returns the bytes.
#[pyclass(module = "burstcore._burstcore")]
pub struct CaptureWriter {
    inner: Option<Inner>,
    /// pcapng: what the constructor was given, the defaults of `section()` and `interface()`.
    defaults: Defaults,
    /// pcapng: a section header has been written (`interface()` writes one first if not).
    sectioned: bool,
    /// What the repr tells: blocks written through the methods that track them (`raw_block`
    /// writes what it is given, untracked).
    written: Written,
}

#[derive(Clone, Copy, Default)]
struct Written {
    packets: u64,
    sections: u64,
    interfaces: u64,
}

#[derive(Clone, Copy)]
struct Defaults {
    pcapng: bool,
    byte_order: ByteOrder,
    nanos: bool,
    linktype: u16,
    /// Given to the constructor; else 0 in an interface ("no limit").
    snaplen: Option<u32>,
    /// Bytes of FCS that end each frame (0: none, the norm).
    fcs_len: u8,
}

fn byte_order(s: &str) -> PyResult<ByteOrder> {
    match s {
        "little" | "le" => Ok(ByteOrder::Little),
        "big" | "be" => Ok(ByteOrder::Big),
        _ => Err(to_py(Error::invalid(format!(
            "byte_order={s:?}: use 'little' or 'big'"
        )))),
    }
}

fn resolution(s: &str) -> PyResult<TsResolution> {
    let bad = || {
        to_py(Error::invalid(format!(
            "resolution={s:?}: use '1e-N' (power of ten, N ≤ 19) or '2^-N' (power of two, N ≤ 63)"
        )))
    };
    // Digits only: u8's parser also takes a sign, so '1e-+6' was read as 1e-6.
    let exponent = |k: &str| {
        k.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| k.parse::<u8>().ok())
            .flatten()
            .ok_or_else(bad)
    };
    if let Some(k) = s.strip_prefix("1e-") {
        let k = exponent(k)?;
        return if k <= 19 {
            Ok(TsResolution::Pow10(k))
        } else {
            Err(bad())
        };
    }
    if let Some(k) = s.strip_prefix("2^-") {
        let k = exponent(k)?;
        return if k <= 63 {
            Ok(TsResolution::Pow2(k))
        } else {
            Err(bad())
        };
    }
    Err(bad())
}

impl CaptureWriter {
    fn ng(&mut self) -> PyResult<&mut PcapNgWriter<Vec<u8>>> {
        match &mut self.inner {
            Some(Inner::PcapNg(w)) => Ok(w),
            Some(Inner::Pcap(_)) => Err(to_py(Error::invalid(
                "this is a pcapng block and this writer is pcap: use packet(), or \
                 CaptureWriter(\"pcapng\")",
            ))),
            Some(Inner::Finished(_)) | None => Err(to_py(Error::invalid(
                "the writer is finished (getvalue() was called): start a new CaptureWriter",
            ))),
        }
    }
}

#[pymethods]
impl CaptureWriter {
    /// `format` is 'pcap' or 'pcapng'. For pcap: byte order, ns or µs resolution, link type and
    /// snaplen of the file. For pcapng: the defaults of `section()` (byte order) and
    /// `interface()` (link type, snaplen, resolution 1e-9 with `nanos`, else 1e-6); an interface
    /// declared before any section header gets one in the constructor's byte order.
    /// `fcs_len`: bytes of FCS that end each frame (a switch's mirror may keep it), declared in
    /// pcap's link-type field (its FCS bits: an even count up to 30) or as each pcapng
    /// interface's `if_fcslen` by default; 0, the norm, declares none. The data must hold it.
    ///
    /// A record's data may not be longer than its wire length, nor than the snaplen of its file
    /// or interface when that is not 0 (libpcap would cut or refuse it), nor than libpcap takes
    /// for its link type whatever the snaplen (262144 bytes but for D-Bus, EBHSCR and USBPCAP:
    /// tcpdump stops reading the file there, tshark refuses it) unless `allow_oversized_records`
    /// (burstcore reads such a record with a `CaptureWarning`): `raw_block` writes
    /// malformed pcapng for tests. A timestamp is floored to the file's or interface's
    /// resolution (a µs pcap, the default without `nanos`, keeps 1500 ns as 1 µs). A snaplen of
    /// 0 is no limit in pcap too: libpcap reads it as its largest snaplen for the link type
    /// (262144 for Ethernet), tshark and capinfos as "not set".
    ///
    /// An integer too wide for its field raises OverflowError naming the argument
    /// (`snaplen=1099511627776 does not fit a 32-bit unsigned field: give 0 to 4294967295`). A
    /// string (`user_appl`, `name`, the names of `nrb`) is written as UTF-8 of at most 65535
    /// bytes, without a NUL: tshark and capinfos would end it there; ValueError otherwise.
    #[new]
    // The defaults written out for Python: pyo3 shows a default it cannot print as `...`.
    #[pyo3(
        signature = (format="pcapng", byte_order="little", nanos=false, linktype=Field::of(1), snaplen=None, allow_oversized_records=false, fcs_len=Field::of(0)),
        text_signature = "(format='pcapng', byte_order='little', nanos=False, linktype=1, snaplen=None, allow_oversized_records=False, fcs_len=0)"
    )]
    fn new(
        format: &str,
        byte_order: &str,
        nanos: bool,
        linktype: Field<u16>,
        snaplen: Option<Field<u32>>,
        allow_oversized_records: bool,
        fcs_len: Field<u8>,
    ) -> PyResult<Self> {
        named!(linktype, snaplen, fcs_len);
        let bo = self::byte_order(byte_order)?;
        let defaults = Defaults {
            pcapng: format == "pcapng",
            byte_order: bo,
            nanos,
            linktype,
            snaplen,
            fcs_len,
        };
        let snaplen = snaplen.unwrap_or(262_144);
        let inner = match format {
            "pcap" => {
                let mut w = PcapWriter::new(
                    Vec::new(),
                    PcapOptions::default()
                        .with_byte_order(bo)
                        .with_nanos(nanos)
                        .with_linktype(linktype)
                        .with_snaplen(snaplen)
                        .with_fcs_len(fcs_len),
                )
                .map_err(to_py)?;
                w.allow_oversized_records(allow_oversized_records);
                Inner::Pcap(w)
            }
            "pcapng" => {
                let mut w = PcapNgWriter::new(Vec::new());
                w.allow_oversized_records(allow_oversized_records);
                Inner::PcapNg(w)
            }
            _ => {
                return Err(to_py(Error::invalid(format!(
                    "format={format:?}: use 'pcap' or 'pcapng'"
                ))))
            }
        };
        Ok(CaptureWriter {
            inner: Some(inner),
            defaults,
            sectioned: false,
            written: Written::default(),
        })
    }

    /// A classic pcap record.
    #[pyo3(signature = (ts_ns, data, wire_len=None))]
    fn packet(
        &mut self,
        ts_ns: Field<i64>,
        data: &[u8],
        wire_len: Option<Field<u32>>,
    ) -> PyResult<()> {
        named!(ts_ns, wire_len);
        match &mut self.inner {
            Some(Inner::Pcap(w)) => {
                w.write_packet(ts_ns, wire_len.unwrap_or(data.len() as u32), data)
                    .map_err(to_py)?;
                self.written.packets += 1;
                Ok(())
            }
            Some(Inner::PcapNg(_)) => Err(to_py(Error::invalid(
                "packet() writes pcap records and this writer is pcapng (the default format): \
                 use section(), interface() and epb(0, data, ts_ns=...), or CaptureWriter(\"pcap\")",
            ))),
            Some(Inner::Finished(_)) | None => Err(to_py(Error::invalid(
                "the writer is finished (getvalue() was called): start a new CaptureWriter",
            ))),
        }
    }

    /// A section header; `byte_order` defaults to the constructor's.
    #[pyo3(signature = (byte_order=None, user_appl=None))]
    fn section(&mut self, byte_order: Option<&str>, user_appl: Option<Text>) -> PyResult<()> {
        named!(user_appl);
        let bo = match byte_order {
            Some(b) => self::byte_order(b)?,
            None => self.defaults.byte_order,
        };
        self.ng()?
            .section(bo, user_appl.as_deref())
            .map_err(to_py)?;
        self.sectioned = true;
        self.written.sections += 1;
        Ok(())
    }

    /// An interface description; its number. Unset arguments take the constructor's values
    /// (snaplen 0, no limit, unless the constructor was given one). `fcs_len`: bytes of FCS
    /// that end each of its frames, written as its `if_fcslen` option when not 0.
    #[pyo3(
        signature = (linktype=None, snaplen=None, resolution=None, ts_offset_s=Field::of(0), name=None, fcs_len=None),
        text_signature = "($self, linktype=None, snaplen=None, resolution=None, ts_offset_s=0, name=None, fcs_len=None)"
    )]
    fn interface(
        &mut self,
        linktype: Option<Field<u16>>,
        snaplen: Option<Field<u32>>,
        resolution: Option<&str>,
        ts_offset_s: Field<i64>,
        name: Option<Text>,
        fcs_len: Option<Field<u8>>,
    ) -> PyResult<u32> {
        named!(linktype, snaplen, ts_offset_s, name, fcs_len);
        let d = self.defaults;
        let r = match resolution {
            Some(r) => self::resolution(r)?,
            None => TsResolution::Pow10(if d.nanos { 9 } else { 6 }),
        };
        // Refused before the section header that the interface would get written.
        if let Some(n) = &name {
            check_string_option("name", n).map_err(to_py)?;
        }
        if !self.sectioned {
            self.section(None, None)?;
        }
        let number = self
            .ng()?
            .interface_with_fcs(
                linktype.unwrap_or(d.linktype),
                snaplen.or(d.snaplen).unwrap_or(0),
                r,
                ts_offset_s,
                name.as_deref(),
                fcs_len.unwrap_or(d.fcs_len),
            )
            .map_err(to_py)?;
        self.written.interfaces += 1;
        Ok(number)
    }

    /// Enhanced Packet Block: give `ts_ns` (converted to the interface's units, floored) or `ts_raw`.
    #[pyo3(signature = (interface, data, ts_ns=None, ts_raw=None, wire_len=None))]
    fn epb(
        &mut self,
        interface: Field<u32>,
        data: &[u8],
        ts_ns: Option<Field<i64>>,
        ts_raw: Option<Field<u64>>,
        wire_len: Option<Field<u32>>,
    ) -> PyResult<()> {
        named!(interface, ts_ns, ts_raw, wire_len);
        let wl = wire_len.unwrap_or(data.len() as u32);
        let w = self.ng()?;
        match (ts_ns, ts_raw) {
            (Some(t), None) => w.enhanced_packet(interface, t, wl, data).map_err(to_py)?,
            (None, Some(r)) => w
                .enhanced_packet_raw(interface, r, wl, data)
                .map_err(to_py)?,
            _ => {
                return Err(to_py(Error::invalid(
                    "epb() takes exactly one of ts_ns and ts_raw",
                )))
            }
        }
        self.written.packets += 1;
        Ok(())
    }

    /// Simple Packet Block: no interface, timestamp or captured length. Readers take interface
    /// 0 and `min(wire_len, its snaplen)` bytes, so interface 0 must be declared and `data` be
    /// that long (`wire_len` defaults to `len(data)`).
    #[pyo3(signature = (data, wire_len=None))]
    fn spb(&mut self, data: &[u8], wire_len: Option<Field<u32>>) -> PyResult<()> {
        named!(wire_len);
        let wl = wire_len.unwrap_or(data.len() as u32);
        self.ng()?.simple_packet(wl, data).map_err(to_py)?;
        self.written.packets += 1;
        Ok(())
    }

    /// Obsolete Packet Block (type 2), its drops count unknown: `ts_raw` in the interface's
    /// units; `wire_len` defaults to `len(data)`.
    #[pyo3(signature = (interface, ts_raw, data, wire_len=None))]
    fn opb(
        &mut self,
        interface: Field<u16>,
        ts_raw: Field<u64>,
        data: &[u8],
        wire_len: Option<Field<u32>>,
    ) -> PyResult<()> {
        named!(interface, ts_raw, wire_len);
        let wl = wire_len.unwrap_or(data.len() as u32);
        self.ng()?
            .obsolete_packet_raw(interface, ts_raw, wl, data)
            .map_err(to_py)?;
        self.written.packets += 1;
        Ok(())
    }

    /// Name Resolution Block from (address string, name) pairs.
    fn nrb(&mut self, records: Vec<(Text, Text)>) -> PyResult<()> {
        let mut parsed = Vec::with_capacity(records.len());
        for (i, (a, n)) in records.into_iter().enumerate() {
            let (a, n) = (
                a.named(&format!("records[{i}][0]"))?,
                n.named(&format!("records[{i}][1]"))?,
            );
            let ip: IpAddr = a.parse().map_err(|_| {
                to_py(Error::invalid(format!(
                    "records[{i}]: {a:?} is not an IP address: give one such as '10.0.0.1' or 'fe80::1'"
                )))
            })?;
            parsed.push((ip, n));
        }
        let parsed: Vec<(IpAddr, &str)> = parsed.iter().map(|(ip, n)| (*ip, n.as_str())).collect();
        self.ng()?.name_resolution(&parsed).map_err(to_py)
    }

    /// Interface Statistics Block of `interface` at `ts_raw` (the interface's units): each
    /// counter given becomes its option (`isb_ifrecv`, `isb_ifdrop`, `isb_osdrop`,
    /// `isb_filteraccept`, `isb_usrdeliv`); one left as None is not written.
    #[pyo3(signature = (interface, ts_raw, if_recv=None, if_drop=None, os_drop=None, fil_accept=None, usr_deliv=None))]
    #[allow(clippy::too_many_arguments)]
    fn isb(
        &mut self,
        interface: Field<u32>,
        ts_raw: Field<u64>,
        if_recv: Option<Field<u64>>,
        if_drop: Option<Field<u64>>,
        os_drop: Option<Field<u64>>,
        fil_accept: Option<Field<u64>>,
        usr_deliv: Option<Field<u64>>,
    ) -> PyResult<()> {
        named!(interface, ts_raw, if_recv, if_drop, os_drop, fil_accept, usr_deliv);
        let stats = InterfaceStats::default()
            .with_if_recv(if_recv)
            .with_if_drop(if_drop)
            .with_os_drop(os_drop)
            .with_fil_accept(fil_accept)
            .with_usr_deliv(usr_deliv);
        self.ng()?
            .interface_statistics(interface, ts_raw, &stats)
            .map_err(to_py)
    }

    /// Decryption Secrets Block (type 0x0A) of `secrets_type`, `data` padded to 4 bytes.
    fn dsb(&mut self, secrets_type: Field<u32>, data: &[u8]) -> PyResult<()> {
        named!(secrets_type);
        self.ng()?
            .decryption_secrets(secrets_type, data)
            .map_err(to_py)
    }

    /// Custom Block (type 0xBAD if `copyable`, else 0x40000BAD) with the Private Enterprise
    /// Number `pen` (default 32473, the one for examples) and `data` as its body.
    #[pyo3(
        signature = (data, pen=Field::of(32473), copyable=true),
        text_signature = "($self, data, pen=32473, copyable=True)"
    )]
    fn custom(&mut self, data: &[u8], pen: Field<u32>, copyable: bool) -> PyResult<()> {
        named!(pen);
        self.ng()?.custom(copyable, pen, data).map_err(to_py)
    }

    /// A block of any type with `body` (padded to 4 bytes), unchecked: for tests of damaged or
    /// unknown blocks. A section header or interface written so is not tracked by the writer.
    fn raw_block(&mut self, block_type: Field<u32>, body: &[u8]) -> PyResult<()> {
        named!(block_type);
        self.ng()?.raw_block(block_type, body).map_err(to_py)
    }

    /// One line of what has been written: the format (a pcap file's resolution and link type),
    /// the sections, interfaces and packets written, the bytes so far, and whether `getvalue()`
    /// has finished it. The default repr named only the class and an address.
    fn __repr__(&self) -> String {
        let w = self.written;
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let size = match &self.inner {
            Some(Inner::Pcap(p)) => p.get_ref().len(),
            Some(Inner::PcapNg(p)) => p.get_ref().len(),
            Some(Inner::Finished(b)) => b.len(),
            None => 0,
        };
        let d = self.defaults;
        let mut parts = vec![if d.pcapng { "pcapng" } else { "pcap" }.to_string()];
        if !d.pcapng {
            parts.push(if d.nanos { "ns" } else { "µs" }.to_string());
            parts.push(format!("linktype {}", d.linktype));
        } else {
            parts.push(plural(w.sections, "section", "sections"));
            parts.push(plural(w.interfaces, "interface", "interfaces"));
        }
        parts.push(plural(w.packets, "packet", "packets"));
        parts.push(plural(size as u64, "byte", "bytes"));
        if matches!(self.inner, Some(Inner::Finished(_))) {
            parts.push("finished".to_string());
        }
        format!("CaptureWriter({})", parts.join(", "))
    }

    /// The capture written so far (finishes the writer); a pcapng one gets its section header
    /// if no block was written.
    fn getvalue<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        // A pcapng capture starts with a section header as a pcap one starts with its file
        // header: without a block written, zero bytes that no reader takes as a capture.
        if matches!(self.inner, Some(Inner::PcapNg(_))) && !self.sectioned {
            self.section(None, None)?;
        }
        let bytes = match self.inner.take() {
            Some(Inner::Pcap(w)) => w.finish().map_err(to_py)?,
            Some(Inner::PcapNg(w)) => w.finish().map_err(to_py)?,
            Some(Inner::Finished(b)) => b,
            None => Vec::new(),
        };
        let out = PyBytes::new(py, &bytes);
        self.inner = Some(Inner::Finished(bytes));
        Ok(out)
    }
}
