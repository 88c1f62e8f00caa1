//! The simulated-hierarchy description of docs/CONTRACTS.md ("The simulated-hierarchy JSON"): the serde types
//! that `memscope sim dump` prints and `--target sim:FILE.json` reads, with defaults for missing
//! optional fields and validation whose errors name the offending field (`l1.ways`,
//! `l2.set_function.masks[3]`). Geometry and latencies follow seeds 000/001 (reads) and 004
//! (writes). Pure: parses from `&str` / `serde_json::Value`; no I/O.
//!
//! Extensions beyond the docs/CONTRACTS.md example (all optional, with defaults, so the example parses):
//! `address_bits`, `seed`, `sm`, `provenance`; `l1`/`l2` `sector_bytes`; `l2.far_hit_ns`,
//! `l2.partitions`, `l2.slice_bytes_per_ns`, `l2.dirty_clean_threshold`, `l2.writeback_fifo_lines`;
//! `dram.controllers`, `channels`, `banks`, `capacity_bytes`, `row_function`, `column_ns`,
//! `activate_ns`, `row_open_ns`; `noise.outlier_ns`; the modular index function
//! `{"divisor_bytes": D, "modulo": N}` for non-power-of-two slice or set counts; the residue slice
//! function `{"residue": {...}}` (hash_residue.rs). Each is
//! documented on its field.

pub mod validate;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A bit mask over an address, written in JSON as a hex string ("0x76a990400"); a decimal string
/// or a JSON integer is accepted on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Mask(pub u64);

impl Serialize for Mask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Mask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => parse_u64(&s).map(Mask).ok_or_else(|| D::Error::custom(format!("{s:?} is not a mask"))),
            Value::Number(n) => n.as_u64().map(Mask).ok_or_else(|| D::Error::custom(format!("{n} is not a mask"))),
            other => Err(D::Error::custom(format!("{other} is not a mask (write \"0x...\")"))),
        }
    }
}

/// Parse "0x1f", "0X1F" or "31" (underscores allowed) as a u64.
pub fn parse_u64(text: &str) -> Option<u64> {
    let t = text.trim().replace('_', "");
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None => t.parse().ok(),
    }
}

/// Replacement policy of a cache or TLB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// Least recently used.
    Lru,
    /// First in, first out (hits do not refresh).
    Fifo,
    /// The 2-bit RRPV policy of seed 004 (new lines 1, a hit sets 0, victim = least recently used
    /// among RRPV 2, else age all and rescan). Caches only.
    Rrip,
}

/// Which address indexes and tags a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Indexing {
    Virtual,
    Physical,
}

/// An index (set or slice) function: a named function of the seeds, or XOR masks (bit `i` of the
/// index is the parity of `address & masks[i]`). Plain bit fields are masks with one bit each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HashFunction {
    /// "rtx4090" or "l40s": for `slice_function`, seed 000's `slice_of(a, 36)` / `slice_of(a, 48)`;
    /// for `set_function`, seed 000's `set_index(a)` (1024 sets; the seed gives one function for
    /// every slice, so both names mean the same set function).
    Named(String),
    /// XOR masks over the address, bit 0 of the index first.
    Masks {
        /// One mask per index bit.
        masks: Vec<Mask>,
    },
    /// Extension: `(address / divisor_bytes) % modulo`, for slice or set counts that are not
    /// powers of two (`modulo` must equal `l2.slices` or `l2.sets_per_slice`). `sim calibrate`
    /// writes it when a measured capacity and slice count need such a count.
    Modular {
        /// Bytes of address that map to one index value before the next (a multiple of the line).
        divisor_bytes: u64,
        /// Number of index values.
        modulo: u32,
    },
    /// Extension: a residue of XOR parities with a partition bit, the form memscope measured on
    /// the H200 (`{"residue": {...}}`, hash_residue.rs; `l2.slices` must be 2 x its modulus with a
    /// partition bit, else its modulus). Slice functions only; `sim calibrate` writes it from a
    /// determined `l2.slices.function` finding.
    Residue { residue: crate::hash_residue::Residue },
}

impl HashFunction {
    /// Plain bits `first_bit .. first_bit + count` as one-bit masks.
    pub fn plain_bits(first_bit: u32, count: u32) -> Self {
        HashFunction::Masks { masks: (first_bit..first_bit + count).map(|b| Mask(1u64 << b)).collect() }
    }
}

/// Largest simulated-hierarchy file read (docs/CONTRACTS.md, "Limits"); a preset's dump is a
/// few KiB.
pub const MAX_HIERARCHY_BYTES: usize = 1 << 20;

/// The whole simulated hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hierarchy {
    /// Human name ("simulated RTX 4090").
    pub name: String,
    /// SM clock in Hz, used to report cycles (2.6e9 on the seeds' 4090).
    pub clock_hz: f64,
    /// Translation page size in bytes (2 MiB on the 4090; power of two).
    pub page_bytes: u64,
    /// Extension: width of virtual and physical addresses in bits (default 40). Masks must fit.
    pub address_bits: u32,
    /// Extension: seed of the page allocator that picks physical pages (default 1).
    pub seed: u64,
    /// Fully associative TLB, one per SM.
    pub tlb: TlbSpec,
    /// L1 data cache, one per SM.
    pub l1: L1Spec,
    /// The L2: slices behind a crossbar.
    pub l2: L2Spec,
    /// DRAM behind the memory controllers.
    pub dram: DramSpec,
    /// Optional timing noise of chases.
    pub noise: NoiseSpec,
    /// Extension: SM count and launch parameters for kernel replay (vadd).
    pub sm: SmSpec,
    /// Extension: where each value came from (`memscope sim calibrate` fills it: field -> "measured
    /// ..." or "default ..."). Absent in presets built from the seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<BTreeMap<String, String>>,
    /// Extension (docs/INTERCONNECT.md): the links of the simulated host this GPU belongs to (peer copies
    /// and latencies for the peer probe); absent: the target has no peers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<memscope_core::links::LinksSpec>,
}

/// Fully associative TLB (seed 000 footnote 8: 16 entries, LRU, per SM, miss 4.4 ns).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlbSpec {
    /// Number of entries (required).
    pub entries: u32,
    /// Extra latency of a miss in ns (required), added to the load that missed.
    pub miss_ns: f64,
    /// "lru" (default) or "fifo".
    pub replacement: Replacement,
}

/// L1 data cache (seed 000: 4 ways, 256 sets of 128-byte lines, 32-byte sectors, virtually indexed
/// and tagged by an XOR set function, hit 15.4 ns). Write-through with allocate-and-update (004).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L1Spec {
    /// Associativity (required, >= 1).
    pub ways: u32,
    /// Number of sets (required, power of two, = 2^index_masks.len() when masks are given).
    pub sets: u32,
    /// Line size in bytes (required, power of two).
    pub line_bytes: u32,
    /// Sector size in bytes (default 32; at most 8 sectors per line).
    pub sector_bytes: u32,
    /// XOR index masks over the (virtual or physical) address, bit 0 first; empty (default): plain
    /// bits just above the line offset. Masks may not touch bits inside a line.
    pub index_masks: Vec<Mask>,
    /// "virtual" (default) or "physical".
    pub indexing: Indexing,
    /// "lru" (default), "fifo" or "rrip".
    pub replacement: Replacement,
    /// Load-to-use latency of a hit in ns (required).
    pub hit_ns: f64,
}

/// L2: `slices` slices, each `ways`-way with `sets_per_slice` sets (seed 000: 36 x 16 x 1024 x 128 B
/// = 72 MiB, physically hashed, hit 127.4 ns); write-back with dirty sector masks, RRPV (seed 004).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct L2Spec {
    /// Number of slices (required; 36 for "rtx4090", 48 for "l40s", 2^masks for XOR masks).
    pub slices: u32,
    /// Associativity of a slice (required).
    pub ways: u32,
    /// Sets per slice (required; 1024 for the named set functions, 2^masks otherwise).
    pub sets_per_slice: u32,
    /// Line size in bytes (required).
    pub line_bytes: u32,
    /// Sector size in bytes (default 32).
    pub sector_bytes: u32,
    /// Which slice owns a line. Default: plain bits just above the set bits of the default set
    /// function (plain bits above the line offset).
    pub slice_function: HashFunction,
    /// Which set inside the slice. Default: plain bits just above the line offset.
    pub set_function: HashFunction,
    /// "physical" (default) or "virtual".
    pub indexing: Indexing,
    /// "rrip" (default), "lru" or "fifo".
    pub replacement: Replacement,
    /// Latency of a hit in the near partition, in ns (required), as a chase measures it.
    pub hit_ns: f64,
    /// Extension: latency of a hit served from the far partition (ns). With `partitions` > 1, an
    /// SM's near partition keeps copies of lines whose home slice lies in another partition: a
    /// copy hit costs `hit_ns`, a miss in the copies that hits the home slice costs `far_hit_ns`
    /// (and installs a copy). So a footprint sweep shows a far plateau between the near L2 and
    /// DRAM (A100/H100 style). Default: none (= `hit_ns`, no copies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub far_hit_ns: Option<f64>,
    /// Extension: with partitions, the copies of far-homed lines live in a structure of their
    /// own with this many ways per set (same sets as a slice), instead of sharing the near
    /// slice's ways. An unusual hierarchy for tests: an eviction set of far copies then has
    /// `far_copy_ways + 1` lines (one search on the H200 once settled on 8 lines where the near
    /// lines' sets take 17; the H200's own `l2.far_copy_ways` finding later read 16).
    /// Default: none (copies share the ways).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub far_copy_ways: Option<u32>,
    /// Extension: the L2 size the simulated driver reports (a CUDA driver's
    /// CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE), bytes. When set, the target's details carry it as
    /// `l2_cache_bytes_attribute`, as a CUDA target's do, so the probes take the same paths on a
    /// preset calibrated from a GPU as on the GPU. Default: none (the probes measure the size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_reported_bytes: Option<u64>,
    /// Extension: number of L2 partitions (default 1). Slices and SMs are split evenly in index
    /// order (slice `s` is in partition `s * partitions / slices`).
    pub partitions: u32,
    /// Extension: bytes per ns one slice can serve (throughput model of kernel replay; default
    /// 166.4 = 64 B/cycle at 2.6 GHz, an assumption, not a seed figure).
    pub slice_bytes_per_ns: f64,
    /// Extension: the 8-dirty rule of seed 004: a store to a set holding at least this many dirty
    /// lines first cleans the least-recently-stored one. Default: half the ways (8 of 16 on the
    /// 4090); 0 disables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirty_clean_threshold: Option<u32>,
}

/// How DRAM rows are formed from a physical address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowFunction {
    /// Rows are aligned `row_bytes` blocks of the physical address space.
    Contiguous,
    /// Seed 000 footnote 13: 1 KiB rows whose column bits are 5, 6, 7, 9 and 8^14.
    Rtx4090,
}

/// DRAM (seed 000: 12 controllers, 2 channels x 16 banks each, 1 KiB rows of 32-byte columns,
/// 255.4 ns, refresh stalls up to ~210 ns on ~2% of accesses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DramSpec {
    /// Round-trip latency of a load that misses L2 and sees no refresh stall, in ns (required).
    pub latency_ns: f64,
    /// Row size in bytes (default 1024; power of two, >= 32).
    pub row_bytes: u64,
    /// Longest refresh stall in ns (default 0). Each bank refreshes for this long once every
    /// `refresh_stall_ns / refresh_fraction` ns (staggered phases): an access that arrives during a
    /// refresh waits for its end, so a fraction `refresh_fraction` of accesses see an extra stall
    /// spread evenly over (0, refresh_stall_ns].
    pub refresh_stall_ns: f64,
    /// Fraction of accesses that meet a refresh (default 0; < 1).
    pub refresh_fraction: f64,
    /// Extension: memory controllers (default 1). Slice `s` uses controller
    /// `s * controllers / slices` (3 slices per controller on the 4090).
    pub controllers: u32,
    /// Extension: channels per controller (default 2).
    pub channels: u32,
    /// Extension: banks per channel (default 16).
    pub banks: u32,
    /// Extension: physical memory in bytes (default 24 GiB; a multiple of `page_bytes`).
    pub capacity_bytes: u64,
    /// Extension: "contiguous" (default) or "rtx4090" (footnote 13's column bits).
    pub row_function: RowFunction,
    /// Extension: channel time to move one 128-byte line of an open row, ns (default 3.4, footnote
    /// 14: "each extra read adds about 3.4 ns").
    pub column_ns: f64,
    /// Extension: extra bank time to open a row, ns (default 47.6, so a fresh-row read costs 15x a
    /// same-row read, footnote 14).
    pub activate_ns: f64,
    /// Extension: how long a row stays open after its last access, ns (default 30; the seed: with
    /// one read in flight "the row is closed again before the next read arrives").
    pub row_open_ns: f64,
    /// Extension: lines each controller's write-back FIFO holds before stores stall (default 64).
    pub writeback_fifo_lines: u32,
}

/// Optional noise on chase timings (seeded, reproducible).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoiseSpec {
    /// Standard deviation of a normal jitter added to every hop, ns (default 0).
    pub jitter_ns: f64,
    /// Fraction of hops that get an outlier delay (default 0).
    pub outlier_fraction: f64,
    /// Extension: largest outlier delay in ns; outliers are uniform in (0, outlier_ns] (default 1000).
    pub outlier_ns: f64,
    /// Seed of the noise generator (default 1).
    pub seed: u64,
    /// Extension, the instrument: ns that recording one hop's time adds to that hop (a clock read
    /// and a store per hop on a GPU), on the recorded repetition of a chase only (default 0).
    pub per_hop_record_ns: f64,
    /// Extension, the instrument: ns a launch adds to the host-side time of a repetition (default 0).
    pub launch_ns: f64,
}

/// Extension: SMs and launch parameters for kernel replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmSpec {
    /// Number of SMs (default 128).
    pub count: u32,
    /// Resident warps per SM (default 48).
    pub resident_warps: u32,
    /// Threads per block of the replayed launch (default 256).
    pub block_threads: u32,
    /// Time for a warp to issue one STG.E, ns (default 2.3, seed 004).
    pub store_issue_ns: f64,
    /// Bytes per cycle through an SM's crossbar port (default 32, seed 004: 84 GB/s at 2.6 GHz).
    pub port_bytes_per_cycle: f64,
}

impl Default for Hierarchy {
    fn default() -> Self {
        Hierarchy {
            name: "custom".into(),
            clock_hz: 2.6e9,
            page_bytes: 2 << 20,
            address_bits: 40,
            seed: 1,
            tlb: TlbSpec::default(),
            l1: L1Spec::default(),
            l2: L2Spec::default(),
            dram: DramSpec::default(),
            noise: NoiseSpec::default(),
            sm: SmSpec::default(),
            provenance: None,
            links: None,
        }
    }
}
impl Default for TlbSpec {
    fn default() -> Self {
        TlbSpec { entries: 16, miss_ns: 4.4, replacement: Replacement::Lru }
    }
}
impl Default for L1Spec {
    fn default() -> Self {
        L1Spec {
            ways: 4,
            sets: 256,
            line_bytes: 128,
            sector_bytes: 32,
            index_masks: Vec::new(),
            indexing: Indexing::Virtual,
            replacement: Replacement::Lru,
            hit_ns: 15.4,
        }
    }
}
impl Default for L2Spec {
    fn default() -> Self {
        L2Spec {
            slices: 36,
            ways: 16,
            sets_per_slice: 1024,
            line_bytes: 128,
            sector_bytes: 32,
            slice_function: HashFunction::Masks { masks: Vec::new() },
            set_function: HashFunction::Masks { masks: Vec::new() },
            indexing: Indexing::Physical,
            replacement: Replacement::Rrip,
            hit_ns: 127.4,
            far_hit_ns: None,
            far_copy_ways: None,
            driver_reported_bytes: None,
            partitions: 1,
            slice_bytes_per_ns: 166.4,
            dirty_clean_threshold: None,
        }
    }
}
impl Default for DramSpec {
    fn default() -> Self {
        DramSpec {
            latency_ns: 255.4,
            row_bytes: 1024,
            refresh_stall_ns: 0.0,
            refresh_fraction: 0.0,
            controllers: 1,
            channels: 2,
            banks: 16,
            capacity_bytes: 24 << 30,
            row_function: RowFunction::Contiguous,
            column_ns: 3.4,
            activate_ns: 47.6,
            row_open_ns: 30.0,
            writeback_fifo_lines: 64,
        }
    }
}
impl Default for NoiseSpec {
    fn default() -> Self {
        NoiseSpec {
            jitter_ns: 0.0,
            outlier_fraction: 0.0,
            outlier_ns: 1000.0,
            seed: 1,
            per_hop_record_ns: 0.0,
            launch_ns: 0.0,
        }
    }
}
impl Default for SmSpec {
    fn default() -> Self {
        SmSpec { count: 128, resident_warps: 48, block_threads: 256, store_issue_ns: 2.3, port_bytes_per_cycle: 32.0 }
    }
}

/// A hierarchy that does not parse or does not validate: `field` is the dotted path of the
/// offending field ("l2.set_function.masks[3]"), `message` what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct HierarchyError {
    pub field: String,
    pub message: String,
}

fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, HierarchyError> {
    Err(HierarchyError { field: field.into(), message: message.into() })
}

/// Deserialize one section key by key, so a bad or unknown field is named exactly.
fn section<T: DeserializeOwned>(name: &str, v: &Value, required: &[&str]) -> Result<T, HierarchyError> {
    let Value::Object(map) = v else {
        return err(name, format!("must be an object, got {v}"));
    };
    for (k, val) in map {
        let mut one = Map::new();
        one.insert(k.clone(), val.clone());
        if let Err(e) = serde_json::from_value::<T>(Value::Object(one)) {
            let field = if name.is_empty() { k.clone() } else { format!("{name}.{k}") };
            return err(field, e.to_string());
        }
    }
    for r in required {
        if !map.contains_key(*r) {
            let field = if name.is_empty() { r.to_string() } else { format!("{name}.{r}") };
            return err(field, "missing (required)");
        }
    }
    serde_json::from_value(v.clone()).map_err(|e| HierarchyError { field: name.into(), message: e.to_string() })
}

impl Hierarchy {
    /// Parse and validate a JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, HierarchyError> {
        if text.len() > MAX_HIERARCHY_BYTES {
            return err("(file)", format!("over {} KiB (MAX_HIERARCHY_BYTES)", MAX_HIERARCHY_BYTES >> 10));
        }
        let v: Value = serde_json::from_str(text)
            .map_err(|e| HierarchyError { field: "(file)".into(), message: format!("not JSON: {e}") })?;
        Self::from_value(&v)
    }

    /// Parse and validate a JSON value.
    pub fn from_value(v: &Value) -> Result<Self, HierarchyError> {
        let Value::Object(map) = v else {
            return err("(top level)", "must be a JSON object");
        };
        let mut top = Map::new();
        for (k, val) in map {
            if !matches!(k.as_str(), "tlb" | "l1" | "l2" | "dram" | "noise" | "sm" | "links") {
                top.insert(k.clone(), val.clone());
            }
        }
        let mut h: Hierarchy = section("", &Value::Object(top), &[])?;
        for key in ["tlb", "l1", "l2", "dram"] {
            if !map.contains_key(key) {
                return err(key, "missing (required)");
            }
        }
        h.tlb = section("tlb", &map["tlb"], &["entries", "miss_ns"])?;
        h.l1 = section("l1", &map["l1"], &["ways", "sets", "line_bytes", "hit_ns"])?;
        h.l2 = section("l2", &map["l2"], &["slices", "ways", "sets_per_slice", "line_bytes", "hit_ns"])?;
        h.dram = section("dram", &map["dram"], &["latency_ns"])?;
        if let Some(n) = map.get("noise") {
            h.noise = section("noise", n, &[])?;
        }
        if let Some(s) = map.get("sm") {
            h.sm = section("sm", s, &[])?;
        }
        if let Some(l) = map.get("links") {
            h.links = Some(section("links", l, &["gpus", "index"])?);
        }
        h.validate()?;
        Ok(h)
    }

    /// The JSON text (pretty) that `from_json_str` reads back to an equal value.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("a hierarchy always serializes")
    }

    /// The L1 index masks in effect (the plain-bit default when none are given).
    pub fn l1_masks(&self) -> Vec<u64> {
        if self.l1.index_masks.is_empty() {
            let lo = self.l1.line_bytes.trailing_zeros();
            (lo..lo + self.l1.sets.trailing_zeros()).map(|b| 1u64 << b).collect()
        } else {
            self.l1.index_masks.iter().map(|m| m.0).collect()
        }
    }

    /// The L2 set function in effect (default: plain bits above the line offset).
    pub fn l2_set_function(&self) -> HashFunction {
        match &self.l2.set_function {
            HashFunction::Masks { masks } if masks.is_empty() => {
                HashFunction::plain_bits(self.l2.line_bytes.trailing_zeros(), self.l2.sets_per_slice.trailing_zeros())
            }
            f => f.clone(),
        }
    }

    /// The L2 slice function in effect (default: plain bits above the default set bits).
    pub fn l2_slice_function(&self) -> HashFunction {
        match &self.l2.slice_function {
            HashFunction::Masks { masks } if masks.is_empty() => HashFunction::plain_bits(
                self.l2.line_bytes.trailing_zeros() + self.l2.sets_per_slice.trailing_zeros(),
                self.l2.slices.trailing_zeros(),
            ),
            f => f.clone(),
        }
    }
}
