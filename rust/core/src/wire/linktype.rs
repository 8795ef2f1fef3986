//! LINKTYPE_* numbers (tcpdump.org/linktypes.html) and the names tshark/capinfos print for them.

/// BSD loopback: a 4-byte address family in host byte order, then the packet.
pub const NULL: u16 = 0;
/// Ethernet (and 802.3).
pub const ETHERNET: u16 = 1;
/// Raw IPv4/IPv6 as the DLT_RAW of the capturing system: 12 on most (OpenBSD's 12 is DLT_LOOP,
/// whose frames start with an address family instead), 14 on OpenBSD. Older writers put these in
/// files instead of LINKTYPE_RAW; tshark reads both as raw IP (libpcap on Linux knows no 14).
pub const RAW_DLT12: u16 = 12;
/// See [`RAW_DLT12`].
pub const RAW_DLT14: u16 = 14;
/// Raw IPv4 or IPv6, the version told by the first nibble.
pub const RAW: u16 = 101;
/// IEEE 802.11 without radio information.
pub const IEEE802_11: u16 = 105;
/// OpenBSD loopback: a 4-byte address family in network byte order.
pub const LOOP: u16 = 108;
/// Linux cooked capture (SLL), as `tcpdump -i any` writes.
pub const LINUX_SLL: u16 = 113;
/// IEEE 802.11 with a Prism header.
pub const IEEE802_11_PRISM: u16 = 119;
/// IEEE 802.11 with a radiotap header.
pub const IEEE802_11_RADIOTAP: u16 = 127;
/// IEEE 802.11 with an AVS header.
pub const IEEE802_11_AVS: u16 = 163;
/// Per-Packet Information (PPI) header, then the link it names.
pub const PPI: u16 = 192;
/// Raw IPv4.
pub const IPV4: u16 = 228;
/// Raw IPv6.
pub const IPV6: u16 = 229;
/// Linux cooked capture v2 (SLL2).
pub const LINUX_SLL2: u16 = 276;

/// The LINKTYPE_ name without its prefix, as tcpdump.org spells it; `"UNKNOWN"` otherwise.
pub fn linktype_name(linktype: u16) -> &'static str {
    match linktype {
        NULL => "NULL",
        ETHERNET => "ETHERNET",
        2 => "EXP_ETHERNET",
        3 => "AX25",
        6 => "IEEE802_5",
        7 => "ARCNET_BSD",
        8 => "SLIP",
        9 => "PPP",
        10 => "FDDI",
        RAW_DLT12 | RAW_DLT14 | RAW => "RAW",
        50 => "PPP_HDLC",
        51 => "PPP_ETHER",
        100 => "ATM_RFC1483",
        104 => "C_HDLC",
        IEEE802_11 => "IEEE802_11",
        106 => "ATM_CLIP",
        107 => "FRELAY",
        LOOP => "LOOP",
        LINUX_SLL => "LINUX_SLL",
        114 => "LTALK",
        117 => "PFLOG",
        IEEE802_11_PRISM => "IEEE802_11_PRISM",
        122 => "IP_OVER_FC",
        123 => "SUNATM",
        IEEE802_11_RADIOTAP => "IEEE802_11_RADIOTAP",
        129 => "ARCNET_LINUX",
        130 => "JUNIPER_MLPPP",
        131 => "JUNIPER_MLFR",
        132 => "JUNIPER_ES",
        133 => "JUNIPER_GGSN",
        134 => "JUNIPER_MFR",
        135 => "JUNIPER_ATM2",
        136 => "JUNIPER_SERVICES",
        137 => "JUNIPER_ATM1",
        138 => "APPLE_IP_OVER_IEEE1394",
        139 => "MTP2_WITH_PHDR",
        140 => "MTP2",
        141 => "MTP3",
        142 => "SCCP",
        143 => "DOCSIS",
        144 => "LINUX_IRDA",
        147 => "USER0",
        148 => "USER1",
        149 => "USER2",
        150 => "USER3",
        151 => "USER4",
        152 => "USER5",
        153 => "USER6",
        154 => "USER7",
        155 => "USER8",
        156 => "USER9",
        157 => "USER10",
        158 => "USER11",
        159 => "USER12",
        160 => "USER13",
        161 => "USER14",
        162 => "USER15",
        IEEE802_11_AVS => "IEEE802_11_AVS",
        164 => "JUNIPER_MONITOR",
        165 => "BACNET_MS_TP",
        166 => "PPP_PPPD",
        169 => "GPRS_LLC",
        177 => "LINUX_LAPD",
        178 => "JUNIPER_ETHER",
        182 => "MFR",
        187 => "BLUETOOTH_HCI_H4",
        189 => "USB_LINUX",
        PPI => "PPI",
        195 => "IEEE802_15_4_WITHFCS",
        196 => "SITA",
        197 => "ERF",
        201 => "BLUETOOTH_HCI_H4_WITH_PHDR",
        202 => "AX25_KISS",
        204 => "PPP_WITH_DIR",
        209 => "IPMB_LINUX",
        215 => "IEEE802_15_4_NONASK_PHY",
        220 => "USB_LINUX_MMAPPED",
        224 => "FC_2",
        226 => "IPNET",
        227 => "CAN_SOCKETCAN",
        IPV4 => "IPV4",
        IPV6 => "IPV6",
        230 => "IEEE802_15_4_NOFCS",
        DBUS => "DBUS",
        235 => "DVB_CI",
        239 => "NFLOG",
        240 => "NETANALYZER",
        242 => "IPOIB",
        247 => "INFINIBAND",
        USBPCAP => "USBPCAP",
        251 => "BLUETOOTH_LE_LL",
        252 => "WIRESHARK_UPPER_PDU",
        253 => "NETLINK",
        254 => "BLUETOOTH_LINUX_MONITOR",
        256 => "BLUETOOTH_LE_LL_WITH_PHDR",
        258 => "PKTAP",
        270 => "NORDIC_BLE",
        271 => "VSOCK",
        EBHSCR => "EBHSCR",
        LINUX_SLL2 => "LINUX_SLL2",
        281 => "DSA_TAG_BRCM",
        282 => "DSA_TAG_BRCM_PREPEND",
        283 => "IEEE802_15_4_TAP",
        284 => "DSA_TAG_DSA",
        285 => "DSA_TAG_EDSA",
        _ => "UNKNOWN",
    }
}

/// The most captured bytes a record of this link type may hold for libpcap (tcpdump) to read the
/// file: 262,144 (its MAXIMUM_SNAPLEN) for every link type but D-Bus (128 MiB), EBHSCR (8 MiB)
/// and USBPCAP (1 MiB), whatever snaplen the file declares. libpcap 1.10 stops at a longer record
/// ("invalid packet capture length ..., bigger than snaplen of 262144") and tshark 4.0 refuses the
/// file ("File has ...-byte packet, bigger than maximum of 262144"; it takes more than libpcap
/// only for the USB link types 189, 220 and 249), both checked on files of each length around
/// these limits (`tests/test_edges.py`). burstcore reads such a record and tells it
/// ([`crate::ErrorKind::OversizedRecord`]); its writers refuse to write one unless allowed.
pub fn libpcap_max_record(linktype: u16) -> u32 {
    match linktype {
        DBUS => 128 << 20,
        EBHSCR => 8 << 20,
        USBPCAP => 1 << 20,
        _ => COMMON_MAX_RECORD,
    }
}

/// [`libpcap_max_record`] of every link type but three: a record no longer than this is read by
/// every tool whatever its link type, so only a longer one needs its link type looked at.
pub const COMMON_MAX_RECORD: u32 = 262_144;
const DBUS: u16 = 231;
const USBPCAP: u16 = 249;
const EBHSCR: u16 = 279;

/// Largest frame a link type carries at a 1500-byte IP MTU, without offload.
/// Ethernet is 14 + 1500 = 1514 without FCS; each 802.1Q tag adds 4 bytes, which the caller must
/// add itself (it knows from [`super::Headers::vlan`] whether tags were present).
pub fn link_mtu_frame(linktype: u16) -> Option<u32> {
    const IP_MTU: u32 = 1500;
    link_header_len(linktype).map(|h| h + IP_MTU)
}

/// Link types whose records hold a network packet with no link frame around it (raw IP, BSD
/// loopback's 4-byte family): no FCS can end them, whatever a user says of a mirror port.
pub fn has_no_link_frame(linktype: u16) -> bool {
    matches!(
        linktype,
        RAW_DLT12 | RAW_DLT14 | RAW | IPV4 | IPV6 | NULL | LOOP
    )
}

/// Bytes of the link header in front of the network packet, for the link types whose header
/// has one length (Ethernet's without 802.1Q tags): what an Ethernet frame of the same packet
/// replaces with its 14 bytes.
pub fn link_header_len(linktype: u16) -> Option<u32> {
    match linktype {
        ETHERNET => Some(14),
        LINUX_SLL => Some(16),
        LINUX_SLL2 => Some(20),
        RAW_DLT12 | RAW_DLT14 | RAW | IPV4 | IPV6 => Some(0),
        NULL | LOOP => Some(4),
        _ => None,
    }
}
