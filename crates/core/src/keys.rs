//! Finding keys: one constant per key string that the probes produce or read, grouped by level;
//! measured quantities carry their unit in the name (`_ns`, `_bytes`, `_bytes_per_s`, `_s`, ...).
//! Keys built at run time (a CPU cache level, a bandwidth kernel) come from the functions below.

// L1 (per SM): latency, capacity, geometry and indexing.
/// L1 hit latency.
pub const L1_HIT_LATENCY_NS: &str = "l1.hit_latency_ns";
/// L1 capacity (the knee of the L1-cached curve).
pub const L1_CAPACITY_BYTES: &str = "l1.capacity_bytes";
/// L1 line size.
pub const L1_LINE_BYTES: &str = "l1.line_bytes";
/// L1 sector size.
pub const L1_SECTOR_BYTES: &str = "l1.sector_bytes";
/// L1 associativity.
pub const L1_WAYS: &str = "l1.ways";
/// L1 set count (from capacity, ways and line).
pub const L1_SETS: &str = "l1.sets";
/// Virtual or physical indexing of L1.
pub const L1_INDEXING: &str = "l1.indexing";
/// L1 set-index XOR masks (a GF(2) basis).
pub const L1_INDEX_MASKS: &str = "l1.index_masks";
/// How often the recovered masks predict conflicts (ratio).
pub const L1_INDEX_PREDICTION_ACCURACY: &str = "l1.index_prediction_accuracy";

// The chase instrument itself.
/// What recording each hop's time adds to a hop (per-hop records less the uninstrumented latency).
pub const LATENCY_PER_HOP_OVERHEAD_NS: &str = "latency.per_hop_overhead_ns";

// L1 eviction-set search (the evset probe).
/// Chases the reduction took.
pub const EVSET_CHASES: &str = "evset.chases";
/// Lines in the candidate pool.
pub const EVSET_POOL_LINES: &str = "evset.pool_lines";
/// Lines in the minimal eviction set.
pub const EVSET_LINES: &str = "evset.lines";

// L2: latency, capacity, rate, geometry, indexing and policy.
/// L2 hit latency (L1-bypassing loads).
pub const L2_HIT_LATENCY_NS: &str = "l2.hit_latency_ns";
/// L2 hit latency through the L1-cached path.
pub const L2_HIT_LATENCY_L1_PATH_NS: &str = "l2.hit_latency_l1_path_ns";
/// Hit latency of the far L2 partition.
pub const L2_FAR_HIT_LATENCY_NS: &str = "l2.far_hit_latency_ns";
/// The L2 segment one SM sees (half-way footprint).
pub const L2_SEGMENT_CAPACITY_BYTES: &str = "l2.segment_capacity_bytes";
/// L2 capacity.
pub const L2_CAPACITY_BYTES: &str = "l2.capacity_bytes";
/// All-SM L2 read rate.
pub const L2_BANDWIDTH_BYTES_PER_S: &str = "l2.bandwidth_bytes_per_s";
/// Virtual or physical indexing of L2.
pub const L2_INDEXING: &str = "l2.indexing";
/// L2 associativity.
pub const L2_WAYS: &str = "l2.ways";
/// Ways of the near partition's sets that hold copies of far-homed lines (a minimal eviction set
/// of lines served by the far partition).
pub const L2_FAR_COPY_WAYS: &str = "l2.far_copy_ways";
/// L2 line size.
pub const L2_LINE_BYTES: &str = "l2.line_bytes";
/// L2 set count.
pub const L2_SETS: &str = "l2.sets";
/// Occupancy estimate of the L2 set count.
pub const L2_SETS_ESTIMATE: &str = "l2.sets_estimate";
/// Chases the L2 eviction-set search took.
pub const L2_EVSET_CHASES: &str = "l2.evset_chases";
/// Hops the L2 eviction-set search took.
pub const L2_EVSET_HOPS: &str = "l2.evset_hops";
/// L2 replacement signature (lru, fifo, rrpv).
pub const L2_POLICY: &str = "l2.policy";

// L2 slices (seed 000's max-counter method, CUDA only).
/// Number of L2 slices.
pub const L2_SLICES_COUNT: &str = "l2.slices.count";
/// Which partition each page half maps to.
pub const L2_SLICES_PAGE_PARTITION: &str = "l2.slices.page_partition";
/// Slice-function XOR masks within a page.
pub const L2_SLICES_PAGE_MASKS: &str = "l2.slices.page_masks";
/// Share of sampled lines with a clear max counter (ratio).
pub const L2_SLICES_CLEAR_FRACTION: &str = "l2.slices.clear_fraction";
/// Slices seen within one page.
pub const L2_SLICES_PAGE_SLICES_SEEN: &str = "l2.slices.page_slices_seen";
/// Estimated slices within one page.
pub const L2_SLICES_PAGE_SLICES_ESTIMATE: &str = "l2.slices.page_slices_estimate";
/// Share of lines in the far partition (ratio).
pub const L2_SLICES_FAR_FRACTION: &str = "l2.slices.far_fraction";
/// Which lines are in the far partition.
pub const L2_SLICES_FAR_PARTITION: &str = "l2.slices.far_partition";
/// The slice function within a 2 MiB page with each mapped page's share, from the
/// `l2.slices.function` probe's slice map (or why it is undetermined).
pub const L2_SLICES_FUNCTION: &str = "l2.slices.function";
/// Share of held-out lines whose slice the fitted function predicts (ratio; the
/// `l2.slices.function` probe).
pub const L2_SLICES_HELD_OUT_ACCURACY: &str = "l2.slices.held_out_accuracy";
/// Share of the lines of mapped pages left out whose slice the frame function fitted on the other
/// pages' shares predicts (ratio; the `l2.slices.function` probe).
pub const L2_SLICES_FRAME_HELD_OUT_ACCURACY: &str = "l2.slices.frame_held_out_accuracy";
/// The timing check of the slice partition: near/far first touches per SM against its classes.
pub const L2_SLICES_TIMING_CHECK: &str = "l2.slices.timing_check";
/// Wall time of the slices probe.
pub const L2_SLICES_PROBE_SECONDS: &str = "l2.slices.probe_seconds";
/// Wall time of the `l2.slices.function` probe (its slice map included).
pub const L2_SLICES_FUNCTION_PROBE_SECONDS: &str = "l2.slices.function.probe_seconds";

// L2 partition bit (whole-page first-touch laps from two SMs, CUDA only).
/// far = parity(offset & mask) XOR c(page): the mask over the offset within a 2 MiB page (hex).
pub const L2_PARTITION_OFFSET_MASK: &str = "l2.partition.offset_mask";
/// Share of held-out lines the fitted function predicts (ratio).
pub const L2_PARTITION_HELD_OUT_ACCURACY: &str = "l2.partition.held_out_accuracy";
/// First touches labelled near or far, over every page and lap.
pub const L2_PARTITION_LINES_LABELLED: &str = "l2.partition.lines_labelled";
/// The two SMs whose laps were fitted (SM 0 and one of the other partition group).
pub const L2_PARTITION_SMS: &str = "l2.partition.sms";
/// Wall time of the partition probe.
pub const L2_PARTITION_PROBE_SECONDS: &str = "l2.partition.probe_seconds";

// TLB (per SM).
/// L1 TLB entries.
pub const TLB_L1_ENTRIES: &str = "tlb.l1.entries";
/// Page size the TLB maps.
pub const TLB_PAGE_BYTES: &str = "tlb.page_bytes";
/// Extra time of an L1 TLB miss.
pub const TLB_L1_MISS_NS: &str = "tlb.l1.miss_ns";
/// L1 TLB replacement policy.
pub const TLB_L1_REPLACEMENT: &str = "tlb.l1.replacement";
/// Whether the L1 TLB is per SM or shared.
pub const TLB_L1_SCOPE: &str = "tlb.l1.scope";

// DRAM.
/// DRAM read latency.
pub const DRAM_LATENCY_NS: &str = "dram.latency_ns";
/// DRAM row size.
pub const DRAM_ROW_BYTES: &str = "dram.row_bytes";
/// Stall of a chase hop that meets a refresh.
pub const DRAM_REFRESH_STALL_NS: &str = "dram.refresh_stall_ns";
/// Share of hops that meet a refresh (ratio).
pub const DRAM_REFRESH_FRACTION: &str = "dram.refresh_fraction";

// Device rates and costs (CUDA only).
/// DRAM read bandwidth (one of `bw_bytes_per_s`'s keys).
pub const BW_READ_BYTES_PER_S: &str = "bw.read_bytes_per_s";
/// Kernel launch floor.
pub const LAUNCH_FLOOR_S: &str = "launch.floor_s";
/// CUDA-graph launch floor.
pub const LAUNCH_GRAPH_FLOOR_S: &str = "launch.graph_floor_s";
/// Sectors per warp request by lane stride.
pub const COALESCE_SECTORS_PER_REQUEST: &str = "coalesce.sectors_per_request";
/// Store issue cost.
pub const STORE_ISSUE_CYCLES: &str = "store.issue_cycles";
/// Store egress rate per SM.
pub const STORE_EGRESS_BYTES_PER_CYCLE: &str = "store.egress_bytes_per_cycle";
/// Whether L1 writes through.
pub const STORE_L1_WRITE_THROUGH: &str = "store.l1_write_through";
/// Exposed cost of a dirty L2 line's write-back.
pub const STORE_L2_WRITEBACK_EXPOSED_NS_PER_LINE: &str = "store.l2_writeback_exposed_ns_per_line";

// The SM's other memories (docs/SM_MEMORIES.md; CUDA only): the constant caches, the read-only (ld.global.nc)
// and texture paths, what shares storage with L1, and miss penalties per level.
/// Constant-cache L1 hit latency (indexed constant loads).
pub const CONST_L1_HIT_LATENCY_NS: &str = "const.l1.hit_latency_ns";
/// Constant-cache L1 capacity (the knee of the constant chase).
pub const CONST_L1_CAPACITY_BYTES: &str = "const.l1.capacity_bytes";
/// What a constant-cache L1 miss fetches (stride experiment).
pub const CONST_L1_FETCH_BYTES: &str = "const.l1.fetch_bytes";
/// Constant L1 miss penalty (L1.5 hit less L1 hit, same instrument).
pub const CONST_L1_MISS_PENALTY_NS: &str = "const.l1.miss_penalty_ns";
/// Constant-cache L1 instances per SM.
pub const CONST_L1_INSTANCES_PER_SM: &str = "const.l1.instances_per_sm";
/// Paths whose fill evicts the constant L1.
pub const CONST_L1_SHARED_WITH: &str = "const.l1.shared_with";
/// Constant-cache L1.5 hit latency.
pub const CONST_L1_5_HIT_LATENCY_NS: &str = "const.l1_5.hit_latency_ns";
/// Constant-cache L1.5 capacity.
pub const CONST_L1_5_CAPACITY_BYTES: &str = "const.l1_5.capacity_bytes";
/// Read-only path (ld.global.nc) hit latency.
pub const TEX_NC_HIT_LATENCY_NS: &str = "tex.nc.hit_latency_ns";
/// Read-only path capacity.
pub const TEX_NC_CAPACITY_BYTES: &str = "tex.nc.capacity_bytes";
/// What a read-only-path miss fetches.
pub const TEX_NC_FETCH_BYTES: &str = "tex.nc.fetch_bytes";
/// Read-only path miss penalty (its L2 level less its hit, same instrument).
pub const TEX_NC_MISS_PENALTY_NS: &str = "tex.nc.miss_penalty_ns";
/// Paths whose fill evicts the read-only path's lines.
pub const TEX_NC_SHARED_WITH: &str = "tex.nc.shared_with";
/// Texture fetch hit latency (tex.1d over a linear buffer).
pub const TEX_TEXTURE_HIT_LATENCY_NS: &str = "tex.texture.hit_latency_ns";
/// Texture path capacity.
pub const TEX_TEXTURE_CAPACITY_BYTES: &str = "tex.texture.capacity_bytes";
/// What a texture miss fetches.
pub const TEX_TEXTURE_FETCH_BYTES: &str = "tex.texture.fetch_bytes";
/// Texture miss penalty.
pub const TEX_TEXTURE_MISS_PENALTY_NS: &str = "tex.texture.miss_penalty_ns";
/// Paths whose fill evicts the texture path's lines.
pub const TEX_TEXTURE_SHARED_WITH: &str = "tex.texture.shared_with";
/// L1 (ld.global.ca) hit latency in the texture probe's own instrument, for comparison.
pub const TEX_L1_CA_HIT_LATENCY_NS: &str = "tex.l1_ca.hit_latency_ns";
/// L1 (ld.global.ca) capacity in the texture probe's own sweep, for comparison.
pub const TEX_L1_CA_CAPACITY_BYTES: &str = "tex.l1_ca.capacity_bytes";
/// Paths whose fill evicts L1 (ld.global.ca) lines.
pub const L1_SHARED_WITH: &str = "l1.shared_with";
/// L1 instances per SM.
pub const L1_INSTANCES_PER_SM: &str = "l1.instances_per_sm";
/// L1 miss penalty: the L2 hit through the L1 path less the L1 hit.
pub const L1_MISS_PENALTY_NS: &str = "l1.miss_penalty_ns";
/// L2 miss penalty: DRAM latency less the near-L2 hit.
pub const L2_MISS_PENALTY_NS: &str = "l2.miss_penalty_ns";
/// Far-partition penalty: the far-L2 hit less the near-L2 hit.
pub const L2_FAR_PENALTY_NS: &str = "l2.far_penalty_ns";
// Shared memory (per SM, CUDA only; the smem probe).
/// Shared-memory load latency (dependent chase).
pub const SMEM_LOAD_LATENCY_NS: &str = "smem.load_latency_ns";
/// Shared-memory read bandwidth of one SM.
pub const SMEM_BANDWIDTH_BYTES_PER_CYCLE_PER_SM: &str = "smem.bandwidth_bytes_per_cycle_per_sm";
/// Shared-memory read bandwidth of all SMs.
pub const SMEM_BANDWIDTH_BYTES_PER_S: &str = "smem.bandwidth_bytes_per_s";
/// Number of shared-memory banks.
pub const SMEM_BANKS: &str = "smem.banks";
/// Width of a shared-memory bank.
pub const SMEM_BANK_WIDTH_BYTES: &str = "smem.bank_width_bytes";
/// Extra cycles per warp access for each further way of bank conflict.
pub const SMEM_CONFLICT_WAY_CYCLES: &str = "smem.conflict_way_cycles";
/// The shared-memory carveouts the driver configures (measured by residency).
pub const SMEM_CARVEOUT_STEPS_BYTES: &str = "smem.carveout_steps_bytes";
/// Shared memory per SM (driver attribute).
pub const SMEM_CAPACITY_PER_SM_BYTES: &str = "smem.capacity_per_sm_bytes";
/// Shared memory one block may opt in to (driver attribute).
pub const SMEM_BLOCK_OPTIN_BYTES: &str = "smem.block_optin_bytes";
/// Shared memory the system reserves per block (driver attribute).
pub const SMEM_BLOCK_RESERVED_BYTES: &str = "smem.block_reserved_bytes";

// Atomics (CUDA only; the atomics probe).
/// Latency of a dependent 32-bit global fetch-and-add (near L2 partition).
pub const ATOMICS_GLOBAL_LATENCY_NS: &str = "atomics.global_latency_ns";
/// The same for words whose slice is in the far L2 partition.
pub const ATOMICS_GLOBAL_FAR_LATENCY_NS: &str = "atomics.global_far_latency_ns";
/// All-SM rate of global fetch-and-adds to one word.
pub const ATOMICS_GLOBAL_SAME_ADDRESS_OPS_PER_S: &str = "atomics.global_same_address_ops_per_s";
/// All-SM rate of global fetch-and-adds, each thread its own word.
pub const ATOMICS_GLOBAL_DISTINCT_OPS_PER_S: &str = "atomics.global_distinct_ops_per_s";
/// Latency of a dependent 32-bit shared fetch-and-add.
pub const ATOMICS_SHARED_LATENCY_NS: &str = "atomics.shared_latency_ns";
/// One SM's rate of shared fetch-and-adds to one word.
pub const ATOMICS_SHARED_SAME_ADDRESS_OPS_PER_CYCLE_PER_SM: &str = "atomics.shared_same_address_ops_per_cycle_per_sm";
/// One SM's rate of shared fetch-and-adds, each thread its own word.
pub const ATOMICS_SHARED_DISTINCT_OPS_PER_CYCLE_PER_SM: &str = "atomics.shared_distinct_ops_per_cycle_per_sm";

// Bandwidth by level and by parallelism (CUDA only; the levelbw and inflight probes).
/// L1-resident read bandwidth of one SM.
pub const L1_BANDWIDTH_BYTES_PER_CYCLE_PER_SM: &str = "l1.bandwidth_bytes_per_cycle_per_sm";
/// L1-resident read bandwidth of all SMs.
pub const L1_BANDWIDTH_BYTES_PER_S: &str = "l1.bandwidth_bytes_per_s";
/// All-SM write rate over an L2-resident footprint.
pub const L2_WRITE_BANDWIDTH_BYTES_PER_S: &str = "l2.write_bandwidth_bytes_per_s";
/// All-SM read rate of one 128-byte line (one slice serves it).
pub const L2_SLICE_BANDWIDTH_BYTES_PER_S: &str = "l2.slice_bandwidth_bytes_per_s";
/// The L2 read plateau over the one-line (one-slice) rate, against the slice count.
pub const L2_BANDWIDTH_OVER_SLICE_RATIO: &str = "l2.bandwidth_over_slice_ratio";
/// Bytes in flight per SM that reach 90 % of the L2 read plateau.
pub const L2_INFLIGHT_90PCT_PER_SM_BYTES: &str = "l2.inflight_90pct_per_sm_bytes";
/// Bytes in flight per SM that reach 90 % of the DRAM read plateau.
pub const DRAM_INFLIGHT_90PCT_PER_SM_BYTES: &str = "dram.inflight_90pct_per_sm_bytes";

// The host CPU (fixed keys; the per-level ones come from `cpu_capacity_bytes` and friends).
/// Cache line size (stride probe).
pub const CPU_LINE_BYTES: &str = "cpu.line_bytes";
/// DRAM latency behind the last cache level.
pub const CPU_DRAM_LATENCY_NS: &str = "cpu.dram.latency_ns";

/// `cpu.<level>.capacity_bytes` (level: l1d, l2, l3).
pub fn cpu_capacity_bytes(level: &str) -> String {
    format!("cpu.{level}.capacity_bytes")
}

/// `cpu.<level>.hit_latency_ns`.
pub fn cpu_hit_latency_ns(level: &str) -> String {
    format!("cpu.{level}.hit_latency_ns")
}

/// `cpu.<level>.os_capacity_bytes`: the OS-reported size beside the measured one.
pub fn cpu_os_capacity_bytes(level: &str) -> String {
    format!("cpu.{level}.os_capacity_bytes")
}

// The interconnect (docs/INTERCONNECT.md): host <-> device and peer <-> peer, test names after nvbandwidth's.
/// PCIe generation of the GPU's link (NVML, read after the copies).
pub const LINK_PCIE_GEN: &str = "link.pcie_gen";
/// PCIe lanes of the GPU's link (NVML).
pub const LINK_PCIE_WIDTH: &str = "link.pcie_width";
/// Nominal rate of one direction of that link after line encoding, bytes/s.
pub const LINK_NOMINAL_BYTES_PER_S: &str = "link.nominal_bytes_per_s";
/// Host <-> device latency: a pointer chase by one GPU thread over mapped pinned host memory.
pub const LINK_HOST_DEVICE_LATENCY_NS: &str = "link.host_device_latency_sm_ns";
/// A small (8-byte) host -> device -> host copy round trip timed on the host.
pub const LINK_HOST_ROUND_TRIP_NS: &str = "link.host_round_trip_ns";
/// The host's own single-thread copy from the pageable buffer into pinned memory (the driver's
/// staging work for a pageable host -> device copy), bytes/s.
pub const LINK_HOST_MEMCPY_PAGEABLE_TO_PINNED_BYTES_PER_S: &str = "link.host_memcpy_pageable_to_pinned_bytes_per_s";
/// The same from pinned memory into the pageable buffer (a pageable device -> host copy's), bytes/s.
pub const LINK_HOST_MEMCPY_PINNED_TO_PAGEABLE_BYTES_PER_S: &str = "link.host_memcpy_pinned_to_pageable_bytes_per_s";
/// The best host -> device plateau over the link's nominal rate.
pub const LINK_H2D_FRACTION_OF_NOMINAL: &str = "link.host_to_device_fraction_of_nominal";
/// The best device -> host plateau over the link's nominal rate.
pub const LINK_D2H_FRACTION_OF_NOMINAL: &str = "link.device_to_host_fraction_of_nominal";
/// Device-local copy through the copy engine (cuMemcpyDtoDAsync), bytes read + written per second.
pub const BW_COPY_CE_BYTES_PER_S: &str = "bw.copy_ce_bytes_per_s";
/// GPUs of the host the peer matrix spans.
pub const PEER_GPUS: &str = "peer.gpus";
/// Peer access per ordered pair: true, or the reason it is not possible.
pub const PEER_ACCESS: &str = "peer.access";
/// Peer latency matrix (ns): GPU row chases over GPU column's memory.
pub const PEER_LATENCY_NS: &str = "peer.device_to_device_latency_sm_ns";
/// The links more than the tolerance below (or, for latency, above) the matrix median.
pub const PEER_OUTLIERS: &str = "peer.outliers";

/// `link.<test>_bytes_per_s`: the large-size plateau of one host <-> device test.
pub fn link_bytes_per_s(test: &str) -> String {
    format!("link.{test}_bytes_per_s")
}

/// `peer.<test>_bytes_per_s`: one peer bandwidth matrix (JSON rows, null where not measured).
pub fn peer_bytes_per_s(test: &str) -> String {
    format!("peer.{test}_bytes_per_s")
}

/// `bw.<kind>_bytes_per_s` (kind: read, write, copy, ...).
pub fn bw_bytes_per_s(kind: &str) -> String {
    format!("bw.{kind}_bytes_per_s")
}

/// `peak.<kind>_flops_per_s`.
pub fn peak_flops_per_s(kind: &str) -> String {
    format!("peak.{kind}_flops_per_s")
}

/// The operation classes whose launch floor the bottleneck model charges (seed 003; docs/MODEL.md),
/// one per kind of kernel the model evaluates, each timed at its smallest operation. Shared by the
/// producer (the launch probe, one `launch_class_floor_s` finding per class) and the consumer
/// (`memscope_model::run_ceilings`).
pub const LAUNCH_CLASSES: [&str; 9] =
    ["matmul.fp32", "matmul.fp16", "add", "mul", "fma", "gelu", "layernorm", "softmax", "attention"];

/// `launch.op.<class>_floor_s`: the launch floor of one operation class (`LAUNCH_CLASSES`). A dot
/// inside the class becomes `_` (`matmul.fp32` -> `launch.op.matmul_fp32_floor_s`), so every key
/// keeps three dotted parts and ends in its unit; the class names themselves have no `_`, so the
/// mapping is one to one.
pub fn launch_class_floor_s(class: &str) -> String {
    format!("launch.op.{}_floor_s", class.replace('.', "_"))
}

/// `fence.<scope>_ns`.
pub fn fence_ns(scope: &str) -> String {
    format!("fence.{scope}_ns")
}

/// Every fixed key above.
pub const ALL: &[&str] = &[
    LATENCY_PER_HOP_OVERHEAD_NS,
    L1_HIT_LATENCY_NS,
    L1_CAPACITY_BYTES,
    L1_LINE_BYTES,
    L1_SECTOR_BYTES,
    L1_WAYS,
    L1_SETS,
    L1_INDEXING,
    L1_INDEX_MASKS,
    L1_INDEX_PREDICTION_ACCURACY,
    EVSET_CHASES,
    EVSET_POOL_LINES,
    EVSET_LINES,
    L2_HIT_LATENCY_NS,
    L2_HIT_LATENCY_L1_PATH_NS,
    L2_FAR_HIT_LATENCY_NS,
    L2_SEGMENT_CAPACITY_BYTES,
    L2_CAPACITY_BYTES,
    L2_BANDWIDTH_BYTES_PER_S,
    L2_INDEXING,
    L2_WAYS,
    L2_FAR_COPY_WAYS,
    L2_LINE_BYTES,
    L2_SETS,
    L2_SETS_ESTIMATE,
    L2_EVSET_CHASES,
    L2_EVSET_HOPS,
    L2_POLICY,
    L2_SLICES_COUNT,
    L2_SLICES_PAGE_PARTITION,
    L2_SLICES_PAGE_MASKS,
    L2_SLICES_CLEAR_FRACTION,
    L2_SLICES_PAGE_SLICES_SEEN,
    L2_SLICES_PAGE_SLICES_ESTIMATE,
    L2_SLICES_FAR_FRACTION,
    L2_SLICES_FAR_PARTITION,
    L2_SLICES_FUNCTION,
    L2_SLICES_HELD_OUT_ACCURACY,
    L2_SLICES_FRAME_HELD_OUT_ACCURACY,
    L2_SLICES_TIMING_CHECK,
    L2_SLICES_PROBE_SECONDS,
    L2_SLICES_FUNCTION_PROBE_SECONDS,
    TLB_L1_ENTRIES,
    TLB_PAGE_BYTES,
    TLB_L1_MISS_NS,
    TLB_L1_REPLACEMENT,
    TLB_L1_SCOPE,
    DRAM_LATENCY_NS,
    DRAM_ROW_BYTES,
    DRAM_REFRESH_STALL_NS,
    DRAM_REFRESH_FRACTION,
    BW_READ_BYTES_PER_S,
    LAUNCH_FLOOR_S,
    LAUNCH_GRAPH_FLOOR_S,
    COALESCE_SECTORS_PER_REQUEST,
    STORE_ISSUE_CYCLES,
    STORE_EGRESS_BYTES_PER_CYCLE,
    STORE_L1_WRITE_THROUGH,
    STORE_L2_WRITEBACK_EXPOSED_NS_PER_LINE,
    CONST_L1_HIT_LATENCY_NS,
    CONST_L1_CAPACITY_BYTES,
    CONST_L1_FETCH_BYTES,
    CONST_L1_MISS_PENALTY_NS,
    CONST_L1_INSTANCES_PER_SM,
    CONST_L1_SHARED_WITH,
    CONST_L1_5_HIT_LATENCY_NS,
    CONST_L1_5_CAPACITY_BYTES,
    TEX_NC_HIT_LATENCY_NS,
    TEX_NC_CAPACITY_BYTES,
    TEX_NC_FETCH_BYTES,
    TEX_NC_MISS_PENALTY_NS,
    TEX_NC_SHARED_WITH,
    TEX_TEXTURE_HIT_LATENCY_NS,
    TEX_TEXTURE_CAPACITY_BYTES,
    TEX_TEXTURE_FETCH_BYTES,
    TEX_TEXTURE_MISS_PENALTY_NS,
    TEX_TEXTURE_SHARED_WITH,
    TEX_L1_CA_HIT_LATENCY_NS,
    TEX_L1_CA_CAPACITY_BYTES,
    L1_SHARED_WITH,
    L1_INSTANCES_PER_SM,
    L1_MISS_PENALTY_NS,
    L2_MISS_PENALTY_NS,
    L2_FAR_PENALTY_NS,
    SMEM_LOAD_LATENCY_NS,
    SMEM_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
    SMEM_BANDWIDTH_BYTES_PER_S,
    SMEM_BANKS,
    SMEM_BANK_WIDTH_BYTES,
    SMEM_CONFLICT_WAY_CYCLES,
    SMEM_CARVEOUT_STEPS_BYTES,
    SMEM_CAPACITY_PER_SM_BYTES,
    SMEM_BLOCK_OPTIN_BYTES,
    SMEM_BLOCK_RESERVED_BYTES,
    ATOMICS_GLOBAL_LATENCY_NS,
    ATOMICS_GLOBAL_FAR_LATENCY_NS,
    ATOMICS_GLOBAL_SAME_ADDRESS_OPS_PER_S,
    ATOMICS_GLOBAL_DISTINCT_OPS_PER_S,
    ATOMICS_SHARED_LATENCY_NS,
    ATOMICS_SHARED_SAME_ADDRESS_OPS_PER_CYCLE_PER_SM,
    ATOMICS_SHARED_DISTINCT_OPS_PER_CYCLE_PER_SM,
    L1_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
    L1_BANDWIDTH_BYTES_PER_S,
    L2_WRITE_BANDWIDTH_BYTES_PER_S,
    L2_SLICE_BANDWIDTH_BYTES_PER_S,
    L2_BANDWIDTH_OVER_SLICE_RATIO,
    L2_INFLIGHT_90PCT_PER_SM_BYTES,
    DRAM_INFLIGHT_90PCT_PER_SM_BYTES,
    CPU_LINE_BYTES,
    CPU_DRAM_LATENCY_NS,
    LINK_PCIE_GEN,
    LINK_PCIE_WIDTH,
    LINK_NOMINAL_BYTES_PER_S,
    LINK_HOST_DEVICE_LATENCY_NS,
    LINK_HOST_ROUND_TRIP_NS,
    LINK_HOST_MEMCPY_PAGEABLE_TO_PINNED_BYTES_PER_S,
    LINK_HOST_MEMCPY_PINNED_TO_PAGEABLE_BYTES_PER_S,
    LINK_H2D_FRACTION_OF_NOMINAL,
    LINK_D2H_FRACTION_OF_NOMINAL,
    BW_COPY_CE_BYTES_PER_S,
    PEER_GPUS,
    PEER_ACCESS,
    PEER_LATENCY_NS,
    PEER_OUTLIERS,
];

/// The fixed keys that are measured quantities with a unit (the rest are counts, ratios, text).
pub const MEASURED: &[&str] = &[
    LATENCY_PER_HOP_OVERHEAD_NS,
    L1_HIT_LATENCY_NS,
    L1_CAPACITY_BYTES,
    L1_LINE_BYTES,
    L1_SECTOR_BYTES,
    L2_HIT_LATENCY_NS,
    L2_HIT_LATENCY_L1_PATH_NS,
    L2_FAR_HIT_LATENCY_NS,
    L2_SEGMENT_CAPACITY_BYTES,
    L2_CAPACITY_BYTES,
    L2_BANDWIDTH_BYTES_PER_S,
    L2_LINE_BYTES,
    L2_SLICES_PROBE_SECONDS,
    L2_SLICES_FUNCTION_PROBE_SECONDS,
    TLB_PAGE_BYTES,
    TLB_L1_MISS_NS,
    DRAM_LATENCY_NS,
    DRAM_ROW_BYTES,
    DRAM_REFRESH_STALL_NS,
    BW_READ_BYTES_PER_S,
    LAUNCH_FLOOR_S,
    LAUNCH_GRAPH_FLOOR_S,
    STORE_ISSUE_CYCLES,
    STORE_EGRESS_BYTES_PER_CYCLE,
    STORE_L2_WRITEBACK_EXPOSED_NS_PER_LINE,
    CONST_L1_HIT_LATENCY_NS,
    CONST_L1_CAPACITY_BYTES,
    CONST_L1_FETCH_BYTES,
    CONST_L1_MISS_PENALTY_NS,
    CONST_L1_5_HIT_LATENCY_NS,
    CONST_L1_5_CAPACITY_BYTES,
    TEX_NC_HIT_LATENCY_NS,
    TEX_NC_CAPACITY_BYTES,
    TEX_NC_FETCH_BYTES,
    TEX_NC_MISS_PENALTY_NS,
    TEX_TEXTURE_HIT_LATENCY_NS,
    TEX_TEXTURE_CAPACITY_BYTES,
    TEX_TEXTURE_FETCH_BYTES,
    TEX_TEXTURE_MISS_PENALTY_NS,
    TEX_L1_CA_HIT_LATENCY_NS,
    TEX_L1_CA_CAPACITY_BYTES,
    L1_MISS_PENALTY_NS,
    L2_MISS_PENALTY_NS,
    L2_FAR_PENALTY_NS,
    SMEM_LOAD_LATENCY_NS,
    SMEM_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
    SMEM_BANDWIDTH_BYTES_PER_S,
    SMEM_BANK_WIDTH_BYTES,
    SMEM_CONFLICT_WAY_CYCLES,
    SMEM_CAPACITY_PER_SM_BYTES,
    SMEM_BLOCK_OPTIN_BYTES,
    SMEM_BLOCK_RESERVED_BYTES,
    ATOMICS_GLOBAL_LATENCY_NS,
    ATOMICS_GLOBAL_FAR_LATENCY_NS,
    ATOMICS_GLOBAL_SAME_ADDRESS_OPS_PER_S,
    ATOMICS_GLOBAL_DISTINCT_OPS_PER_S,
    ATOMICS_SHARED_LATENCY_NS,
    ATOMICS_SHARED_SAME_ADDRESS_OPS_PER_CYCLE_PER_SM,
    ATOMICS_SHARED_DISTINCT_OPS_PER_CYCLE_PER_SM,
    L1_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
    L1_BANDWIDTH_BYTES_PER_S,
    L2_WRITE_BANDWIDTH_BYTES_PER_S,
    L2_SLICE_BANDWIDTH_BYTES_PER_S,
    L2_INFLIGHT_90PCT_PER_SM_BYTES,
    DRAM_INFLIGHT_90PCT_PER_SM_BYTES,
    CPU_LINE_BYTES,
    CPU_DRAM_LATENCY_NS,
    LINK_NOMINAL_BYTES_PER_S,
    LINK_HOST_DEVICE_LATENCY_NS,
    LINK_HOST_ROUND_TRIP_NS,
    LINK_HOST_MEMCPY_PAGEABLE_TO_PINNED_BYTES_PER_S,
    LINK_HOST_MEMCPY_PINNED_TO_PAGEABLE_BYTES_PER_S,
    BW_COPY_CE_BYTES_PER_S,
    PEER_LATENCY_NS,
];

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT_SUFFIXES: &[&str] = &[
        "_ns",
        "_bytes",
        "_bytes_per_s",
        "_s",
        "_seconds",
        "_cycles",
        "_bytes_per_cycle",
        "_ns_per_line",
        "_flops_per_s",
        "_bytes_per_cycle_per_sm",
        "_ops_per_s",
        "_ops_per_cycle_per_sm",
    ];

    fn dotted_lowercase(k: &str) -> bool {
        let parts: Vec<&str> = k.split('.').collect();
        parts.len() >= 2
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'))
    }

    #[test]
    fn keys_are_unique_and_dotted_lowercase() {
        let mut seen = std::collections::BTreeSet::new();
        for k in ALL {
            assert!(seen.insert(*k), "{k} twice");
            assert!(dotted_lowercase(k), "{k} is not dotted lowercase");
        }
    }

    #[test]
    fn measured_keys_end_in_their_unit() {
        for k in MEASURED {
            assert!(ALL.contains(k), "{k} missing from ALL");
            assert!(UNIT_SUFFIXES.iter().any(|s| k.ends_with(s)), "{k} has no unit suffix");
        }
    }

    #[test]
    fn built_keys_match_the_strings() {
        assert_eq!(cpu_capacity_bytes("l1d"), "cpu.l1d.capacity_bytes");
        assert_eq!(cpu_hit_latency_ns("l2"), "cpu.l2.hit_latency_ns");
        assert_eq!(cpu_os_capacity_bytes("l3"), "cpu.l3.os_capacity_bytes");
        assert_eq!(bw_bytes_per_s("read"), BW_READ_BYTES_PER_S);
        assert_eq!(peak_flops_per_s("fp32"), "peak.fp32_flops_per_s");
        assert_eq!(fence_ns("gpu"), "fence.gpu_ns");
        assert_eq!(launch_class_floor_s("matmul.fp32"), "launch.op.matmul_fp32_floor_s");
        assert_eq!(launch_class_floor_s("add"), "launch.op.add_floor_s");
        let class_keys: std::collections::BTreeSet<String> =
            LAUNCH_CLASSES.iter().map(|c| launch_class_floor_s(c)).collect();
        assert_eq!(class_keys.len(), LAUNCH_CLASSES.len(), "two classes share a key");
        for k in &class_keys {
            assert!(dotted_lowercase(k) && k.ends_with("_floor_s") && !ALL.contains(&k.as_str()), "{k}");
        }
        assert!(LAUNCH_CLASSES.iter().all(|c| !c.contains('_')), "a class with '_' would make the key ambiguous");
        for k in [cpu_capacity_bytes("l1d"), cpu_hit_latency_ns("l2"), fence_ns("sys")] {
            assert!(dotted_lowercase(&k));
        }
    }
}
