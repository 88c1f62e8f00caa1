//! SYNTHETIC PyTorch profiler traces written by hand for the tests: the layout of torch.profiler's
//! Chrome trace (cpu_op, cuda_runtime with correlation ids, kernel, ProfilerStep annotations),
//! with durations chosen by the test, not measured.
#![allow(dead_code)]

use serde_json::{json, Value};

pub struct Builder {
    pub events: Vec<Value>,
    pub t_host: f64,
    pub t_dev: f64,
    corr: i64,
    /// Host time of one launch call, µs.
    pub launch_us: f64,
    /// Launch call start to kernel start when the device is idle, µs.
    pub latency_us: f64,
}

impl Default for Builder {
    fn default() -> Self {
        Builder { events: vec![], t_host: 1000.0, t_dev: 0.0, corr: 100, launch_us: 4.0, latency_us: 5.0 }
    }
}

impl Builder {
    /// A profiler step around whatever `f` adds.
    pub fn step(&mut self, n: usize, f: impl FnOnce(&mut Builder)) {
        let start = self.t_host;
        self.t_host += 2.0;
        f(self);
        self.t_host += 2.0;
        self.events.push(json!({"ph": "X", "cat": "user_annotation", "name": format!("ProfilerStep#{n}"),
            "pid": 1, "tid": 1, "ts": start, "dur": self.t_host - start, "args": {}}));
    }

    /// Ops nested outermost first (name, input dims, input types), taking `host_us` on the host,
    /// the innermost launching `kernels` (name, device µs) one after the other.
    pub fn op(&mut self, chain: &[(&str, Value, Value)], host_us: f64, kernels: &[(&str, f64)]) {
        let t = self.t_host;
        for (depth, (name, dims, types)) in chain.iter().enumerate() {
            let d = depth as f64 * 0.25;
            self.events.push(json!({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                "ts": t + d, "dur": host_us - 2.0 * d,
                "args": {"Input Dims": dims, "Input type": types, "Concrete Inputs": []}}));
        }
        let mut at = t + 1.0;
        for (kname, dur) in kernels {
            self.corr += 1;
            self.events.push(json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                "ts": at, "dur": self.launch_us, "args": {"correlation": self.corr, "cbid": 211}}));
            let start = (at + self.latency_us).max(self.t_dev);
            self.events.push(json!({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7,
                "ts": start, "dur": dur, "args": {"correlation": self.corr, "stream": 7, "device": 0}}));
            self.t_dev = start + dur;
            at += self.launch_us + 0.5;
        }
        self.t_host = t + host_us.max(at - t + 0.5);
    }

    /// A kernel replayed from a CUDA graph (no framework op).
    pub fn graph_kernel(&mut self, kname: &str, dur: f64) {
        self.corr += 1;
        let start = self.t_dev.max(self.t_host);
        self.events.push(json!({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": 7,
            "ts": start, "dur": dur, "args": {"correlation": self.corr}}));
        self.t_dev = start + dur;
    }

    pub fn json(&self) -> String {
        json!({"schemaVersion": 1, "deviceProperties": [{"name": "synthetic"}], "traceEvents": self.events,
            "traceName": "synthetic"})
        .to_string()
    }
}

pub fn fp(n: usize) -> Value {
    Value::from(vec!["float"; n])
}
pub fn half(n: usize) -> Value {
    Value::from(vec!["c10::Half"; n])
}

/// A results document with the H200's measured ceilings as results/h200 records them (rounded).
pub fn h200_results() -> Value {
    let f = |v: f64, unit: &str| json!({"value": v, "unit": unit, "method": "synthetic copy", "confidence": "high"});
    json!({"findings": {
        "bw.read_bytes_per_s": f(4.62e12, "bytes/s"),
        "bw.write_bytes_per_s": f(4.69e12, "bytes/s"),
        "bw.copy_bytes_per_s": f(4.29e12, "bytes/s"),
        "l2.bandwidth_bytes_per_s": f(9.86e12, "bytes/s"),
        "l2.capacity_bytes": f(62914560.0, "bytes"),
        "peak.fp32_flops_per_s": f(5.12e13, "flops/s"),
        "peak.fp16_flops_per_s": f(7.75e14, "flops/s"),
        "peak.bf16_flops_per_s": f(8.15e14, "flops/s"),
        "launch.graph_floor_s": f(5.0e-7, "s"),
        "launch.floor_s": f(3.1e-6, "s")
    }})
}

/// One synthetic GPT-2-like decode layer at batch `b`, context `t`, width 768, 12 heads, fp32,
/// with kernel times from a made-up cost law (1 µs + bytes at 3 TB/s or FLOPs at 40 TFLOP/s).
pub fn decode_layer(bl: &mut Builder, b: u64, t: u64) {
    let d = 768u64;
    let dev = |flops: f64, bytes: f64| 1.0 + (bytes / 3e12).max(flops / 4e13) * 1e6;
    let mm = |m: u64, k: u64, n: u64| dev(2.0 * (m * k * n) as f64, ((m * k + k * n + m * n) * 4) as f64);
    bl.op(
        &[
            (
                "aten::layer_norm",
                json!([[b, 1, d], [d], [d], [d], []]),
                json!(["float", "", "float", "float", "Scalar"]),
            ),
            (
                "aten::native_layer_norm",
                json!([[b, 1, d], [d], [d], [d], []]),
                json!(["float", "", "float", "float", "Scalar"]),
            ),
        ],
        18.0,
        &[("vectorized_layer_norm_kernel", dev(8.0 * (b * d) as f64, (2 * b * d * 4) as f64))],
    );
    bl.op(
        &[
            ("aten::linear", json!([[b, 1, d], [3 * d, d], [3 * d]]), fp(3)),
            (
                "aten::addmm",
                json!([[3 * d], [b, d], [d, 3 * d], [], []]),
                json!(["float", "float", "float", "Scalar", "Scalar"]),
            ),
        ],
        22.0,
        &[("ampere_sgemm_64x32_sliced1x4_tn", mm(b, d, 3 * d))],
    );
    bl.op(
        &[
            ("aten::matmul", json!([[b, 12, 1, 64], [b, 12, 64, t]]), fp(2)),
            ("aten::bmm", json!([[b * 12, 1, 64], [b * 12, 64, t]]), fp(2)),
        ],
        20.0,
        &[("gemv2T_kernel", dev((4 * b * 12 * t * 64) as f64 / 2.0, ((b * 12 * t * 64 + 2 * b * 12 * 64) * 4) as f64))],
    );
    bl.op(
        &[
            ("aten::softmax", json!([[b, 12, 1, t], [], []]), json!(["float", "Scalar", ""])),
            ("aten::_softmax", json!([[b, 12, 1, t], [], []]), json!(["float", "Scalar", "Scalar"])),
        ],
        12.0,
        &[("softmax_warp_forward", dev(5.0 * (b * 12 * t) as f64, (2 * b * 12 * t * 4) as f64))],
    );
    bl.op(
        &[("aten::add", json!([[b, 1, d], [b, 1, d], []]), json!(["float", "float", "Scalar"]))],
        9.0,
        &[("vectorized_elementwise_kernel<add>", dev((b * d) as f64, (3 * b * d * 4) as f64))],
    );
    bl.op(
        &[("aten::gelu", json!([[b, 1, 4 * d], []]), json!(["float", "Scalar"]))],
        9.0,
        &[("vectorized_elementwise_kernel<gelu>", dev(8.0 * (b * 4 * d) as f64, (2 * b * 4 * d * 4) as f64))],
    );
}
