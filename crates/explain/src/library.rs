//! The library calibration: PyTorch's own kernels timed on the device over a grid of shapes per
//! op form (`scripts/programs/calibrate_library.py`), and the kernel time of any shape of a
//! calibrated form read off that grid (docs/MODEL.md, "Real programs"). A form is the op a
//! program calls (`aten::addmm`, `aten::mm`, `aten::bmm`, an elementwise or row op), its element
//! type, its operands' layout (the weight stored as it is multiplied, "nn", or transposed, "nt")
//! and, for products, whether K and N are multiples of 16 bytes (cuBLAS's vectorised kernels need
//! it). The library picks its kernel by shape, and its time jumps where the pick changes (a single
//! row runs a matrix-vector kernel, a few rows a split-K or small-tile one), so the time is read
//! from the nearest measured shapes of the same form rather than from a smooth efficiency curve.
//!
//! Reading the grid: log time interpolated multilinearly in the logs of the form's axes (products:
//! M, K, N; batched products: count, M, K, N; row ops: rows, columns). Below an axis's smallest
//! value the time stays at the edge's (latency-bound); above its largest it grows in proportion
//! (work-bound). A corner the sweep skipped (over its size caps) is left out and the others'
//! weights renormalised.

use crate::ops::Dtype;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Which calibrated grid an op belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FormKey {
    /// `addmm`, `mm`, `bmm`, or the row op's trace name and its tensor-input count
    /// (`aten::mul/1`: by a scalar).
    pub op: String,
    pub dtype: Dtype,
    /// `nn`, `nt` (products), `-` (row ops).
    pub layout: &'static str,
    /// Products: K and N multiples of 16 bytes. Always true for batched products and row ops.
    pub aligned: bool,
}

/// An op's form and its coordinates on the form's axes.
#[derive(Debug, Clone, PartialEq)]
pub struct OpShape {
    pub key: FormKey,
    pub dims: Vec<f64>,
}

/// The row ops calibrated (trace names).
const ROW_OPS: [&str; 7] =
    ["aten::add", "aten::mul", "aten::gelu", "aten::silu", "aten::_softmax", "aten::native_layer_norm", "aten::copy_"];

fn shape_of(v: Option<&Value>) -> Option<Vec<u64>> {
    v?.as_array()?.iter().map(Value::as_u64).collect()
}

fn strides_of(v: Option<&Value>) -> Option<Vec<i64>> {
    v?.as_array()?.iter().map(Value::as_i64).collect()
}

/// The layout of a (K x N) operand from its strides: `nn` when its rows are contiguous (last
/// stride 1), `nt` when its columns are (a transposed view); None when neither or unrecorded.
fn layout(strides: Option<Vec<i64>>) -> Option<&'static str> {
    let s = strides?;
    let n = s.len();
    if n < 2 {
        return None;
    }
    if s[n - 1] == 1 {
        Some("nn")
    } else if s[n - 2] == 1 {
        Some("nt")
    } else {
        None
    }
}

/// The form and coordinates of a trace op (`Input Dims`, `Input type`, `Input Strides` as the
/// trace records them); None for an op no calibrated form describes. Strides only give the layout,
/// so the dims may be rewritten (another batch) and the traced strides kept.
pub fn op_shape(name: &str, dims: &[Value], types: &[String], strides: &[Value]) -> Option<OpShape> {
    let dtype_at = |i: usize| types.get(i).and_then(|t| Dtype::parse(t));
    let product = |op: &str, a: usize, w: usize| -> Option<OpShape> {
        let (sa, sw) = (shape_of(dims.get(a))?, shape_of(dims.get(w))?);
        let dtype = dtype_at(a)?;
        let layout = layout(strides_of(strides.get(w)))?;
        match (op, sa.as_slice(), sw.as_slice()) {
            ("bmm", &[c, m, k], &[c2, k2, n]) if c == c2 && k == k2 => Some(OpShape {
                key: FormKey { op: op.into(), dtype, layout, aligned: true },
                dims: vec![c as f64, m as f64, k as f64, n as f64],
            }),
            ("addmm" | "mm", &[m, k], &[k2, n]) if k == k2 => {
                let per = (16.0 / dtype.size_bytes()).max(1.0) as u64;
                let aligned = k.is_multiple_of(per) && n.is_multiple_of(per);
                Some(OpShape {
                    key: FormKey { op: op.into(), dtype, layout, aligned },
                    dims: vec![m as f64, k as f64, n as f64],
                })
            }
            _ => None,
        }
    };
    match name {
        "aten::addmm" => product("addmm", 1, 2),
        "aten::mm" => product("mm", 0, 1),
        "aten::bmm" => product("bmm", 0, 1),
        _ if ROW_OPS.contains(&name) => {
            // The op's size is its largest tensor's (a broadcast weight is the smaller operand).
            let shapes: Vec<(usize, Vec<u64>)> = dims
                .iter()
                .enumerate()
                .filter_map(|(i, d)| shape_of(Some(d)).filter(|s| !s.is_empty()).map(|s| (i, s)))
                .collect();
            let tensors = shapes.len();
            let (i, largest) = shapes.into_iter().max_by_key(|(i, s)| (s.iter().product::<u64>(), usize::MAX - i))?;
            let dtype = dtype_at(i)?;
            let cols = *largest.last()?;
            let rows: u64 = largest[..largest.len() - 1].iter().product();
            (cols > 0 && rows > 0).then(|| OpShape {
                key: FormKey { op: format!("{name}/{tensors}"), dtype, layout: "-", aligned: true },
                dims: vec![rows as f64, cols as f64],
            })
        }
        _ => None,
    }
}

/// One form's grid: each axis's measured values (logs, ascending) and the log kernel time at each
/// measured combination.
#[derive(Debug, Clone, Default)]
struct Grid {
    axes: Vec<Vec<f64>>,
    points: HashMap<Vec<usize>, f64>,
}

/// The calibration read from `calibrate_library.py`'s JSON.
#[derive(Debug, Clone)]
pub struct LibraryCalibration {
    forms: HashMap<FormKey, Grid>,
    /// Records read (shapes of a calibrated form).
    pub records: usize,
    /// The device the sweep ran on, as the file names it.
    pub device: String,
}

impl LibraryCalibration {
    /// Build from the file's text; `name` names it in errors.
    pub fn parse(bytes: &[u8], name: &str) -> Result<LibraryCalibration, String> {
        let doc: Value = serde_json::from_slice(bytes).map_err(|e| format!("{name}: not JSON ({e})"))?;
        let records = doc.get("records").and_then(Value::as_array).ok_or_else(|| {
            format!("{name}: no `records` array (give the output of scripts/programs/calibrate_library.py)")
        })?;
        let mut raw: HashMap<FormKey, Vec<(Vec<f64>, f64)>> = HashMap::new();
        let mut used = 0;
        for r in records {
            let text = |k: &str| r.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
            let types: Vec<String> = text("input_types").iter().map(|v| v.as_str().unwrap_or("").to_string()).collect();
            let Some(op) = r.get("name").and_then(Value::as_str) else { continue };
            let Some(t) = r.get("kernel_s").and_then(Value::as_f64).filter(|t| t.is_finite() && *t > 0.0) else {
                continue;
            };
            let Some(shape) = op_shape(op, &text("input_dims"), &types, &text("input_strides")) else { continue };
            raw.entry(shape.key).or_default().push((shape.dims, t));
            used += 1;
        }
        if used == 0 {
            return Err(format!("{name}: no record of a calibrated op form"));
        }
        let forms = raw
            .into_iter()
            .map(|(key, pts)| {
                let n = pts[0].0.len();
                let mut axes: Vec<Vec<f64>> = vec![Vec::new(); n];
                for (d, _) in &pts {
                    for (i, x) in d.iter().enumerate() {
                        axes[i].push(x.ln());
                    }
                }
                for a in &mut axes {
                    a.sort_by(f64::total_cmp);
                    a.dedup_by(|x, y| (*x - *y).abs() < 1e-12);
                }
                let mut points = HashMap::new();
                for (d, t) in pts {
                    let idx: Vec<usize> = d
                        .iter()
                        .enumerate()
                        .map(|(i, x)| axes[i].iter().position(|v| (v - x.ln()).abs() < 1e-12).unwrap_or(0))
                        .collect();
                    points.insert(idx, t.ln());
                }
                (key, Grid { axes, points })
            })
            .collect();
        let device = doc.pointer("/environment/device").and_then(Value::as_str).unwrap_or("unknown device").to_string();
        Ok(LibraryCalibration { forms, records: used, device })
    }

    /// Read a `.json` or `.json.gz` file.
    pub fn load(path: &Path) -> Result<LibraryCalibration, String> {
        let name = path.display().to_string();
        let raw = std::fs::read(path).map_err(|e| format!("{name}: cannot read the file: {e}"))?;
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&raw[..])
                .read_to_end(&mut out)
                .map_err(|e| format!("{name}: the gzip stream is truncated or corrupt ({e})"))?;
            out
        } else {
            raw
        };
        LibraryCalibration::parse(&bytes, &name)
    }

    /// The grid for `key`: its own, else (bf16 products) the fp16 grid of the same op and layout,
    /// else (unaligned products) the aligned grid.
    fn grid(&self, key: &FormKey) -> Option<&Grid> {
        let mut alt = key.clone();
        self.forms.get(key).or_else(|| {
            if alt.dtype == Dtype::Bf16 {
                alt.dtype = Dtype::Fp16;
            }
            self.forms.get(&alt).or_else(|| {
                alt.aligned = true;
                self.forms.get(&alt)
            })
        })
    }

    /// Kernel time of one call of `shape`, seconds; None when no grid of its form exists.
    pub fn time_s(&self, shape: &OpShape) -> Option<f64> {
        let g = self.grid(&shape.key)?;
        if g.axes.len() != shape.dims.len() || shape.dims.iter().any(|&x| x.is_nan() || x <= 0.0) {
            return None;
        }
        // Per axis: the bracketing indices and weights, and the log growth beyond the top edge.
        let mut per_axis: Vec<[(usize, f64); 2]> = Vec::new();
        let mut beyond = 0.0;
        for (axis, &x) in g.axes.iter().zip(&shape.dims) {
            let q = x.ln();
            let last = axis.len() - 1;
            if q <= axis[0] {
                per_axis.push([(0, 1.0), (0, 0.0)]);
            } else if q >= axis[last] {
                beyond += q - axis[last];
                per_axis.push([(last, 1.0), (last, 0.0)]);
            } else {
                let i = axis.iter().rposition(|&v| v <= q).unwrap_or(0).min(last - 1);
                let f = (q - axis[i]) / (axis[i + 1] - axis[i]);
                per_axis.push([(i, 1.0 - f), (i + 1, f)]);
            }
        }
        let (mut sum, mut weight) = (0.0, 0.0);
        for corner in 0..(1usize << per_axis.len()) {
            let mut idx = Vec::with_capacity(per_axis.len());
            let mut w = 1.0;
            for (d, pair) in per_axis.iter().enumerate() {
                let (i, wi) = pair[(corner >> d) & 1];
                idx.push(i);
                w *= wi;
            }
            if w <= 0.0 {
                continue;
            }
            if let Some(lt) = g.points.get(&idx) {
                sum += w * lt;
                weight += w;
            }
        }
        (weight > 1e-9).then(|| (sum / weight + beyond).exp())
    }

    /// The calibrated forms, for messages: `op dtype layout aligned: shapes`.
    pub fn forms(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .forms
            .iter()
            .map(|(k, g)| {
                format!(
                    "{} {} {}{}: {} shapes",
                    k.op,
                    k.dtype.name(),
                    k.layout,
                    if k.aligned { "" } else { " unaligned" },
                    g.points.len()
                )
            })
            .collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A made-up calibration (not measured): fp32 `addmm` with the weight stored as multiplied, M
    /// 1, 8, 64 and K = N = 1024, 4096; a time law with a jump at M = 8 (another kernel).
    fn made_up() -> LibraryCalibration {
        let mut records = Vec::new();
        for m in [1u64, 8, 64] {
            for k in [1024u64, 4096] {
                for n in [1024u64, 4096] {
                    let t = if m == 1 { 2e-6 } else { 6e-6 } * (k * n) as f64 / 1048576.0 * (1.0 + m as f64 / 64.0);
                    records.push(json!({"name": "aten::addmm", "input_dims": [[n], [m, k], [k, n], [], []],
                        "input_strides": [[1], [k, 1], [n, 1], [], []],
                        "input_types": ["float", "float", "float", "Scalar", "Scalar"], "kernel_s": t}));
                }
            }
        }
        records.push(json!({"name": "aten::mm", "input_dims": [[8, 1024], [1024, 1024]],
            "input_strides": [[1024, 1], [1, 1024]], "input_types": ["c10::Half", "c10::Half"], "kernel_s": 3e-6}));
        records.push(json!({"name": "aten::gelu", "input_dims": [[64, 1024], []], "input_strides": [[1024, 1], []],
            "input_types": ["float", "Scalar"], "kernel_s": 2e-6}));
        records.push(
            json!({"name": "aten::normal_", "input_dims": [[64, 1024]], "input_types": ["float"], "kernel_s": 1.0}),
        );
        let doc = json!({"environment": {"device": "made-up"}, "records": records});
        LibraryCalibration::parse(doc.to_string().as_bytes(), "made-up").unwrap()
    }

    fn addmm(m: u64, k: u64, n: u64, w_strides: Value) -> OpShape {
        let dims = json!([[n], [m, k], [k, n], [], []]);
        let types: Vec<String> =
            ["float", "float", "float", "Scalar", "Scalar"].iter().map(|s| s.to_string()).collect();
        let strides = json!([[1], [k, 1], w_strides, [], []]);
        op_shape("aten::addmm", dims.as_array().unwrap(), &types, strides.as_array().unwrap()).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a / b - 1.0).abs() < 1e-9
    }

    #[test]
    fn a_measured_shape_reads_its_own_time_and_others_interpolate_in_logs() {
        let c = made_up();
        assert_eq!(c.records, 14, "the unknown op is not read");
        let t = |m: u64, k: u64, n: u64| c.time_s(&addmm(m, k, n, json!([n, 1]))).unwrap();
        assert!(close(t(1, 1024, 1024), 2e-6 * (1.0 + 1.0 / 64.0)));
        assert!(close(t(8, 4096, 1024), 6e-6 * 4.0 * (1.0 + 8.0 / 64.0)));
        // Halfway in log M between 1 and 8 (M = 2.83): the geometric mean of the two.
        let mid = 8f64.sqrt();
        let c2 = c.time_s(&OpShape { dims: vec![mid, 1024.0, 1024.0], ..addmm(1, 1024, 1024, json!([1024, 1])) });
        assert!(close(c2.unwrap(), (t(1, 1024, 1024) * t(8, 1024, 1024)).sqrt()));
        // Halfway in log K and log N: the geometric mean of the four corners.
        let corners = (t(8, 1024, 1024) * t(8, 1024, 4096) * t(8, 4096, 1024) * t(8, 4096, 4096)).powf(0.25);
        assert!(close(t(8, 2048, 2048), corners));
        // Above the grid: in proportion (work-bound); below it: the edge's time (latency-bound).
        assert!(close(t(128, 4096, 4096), 2.0 * t(64, 4096, 4096)));
        assert!(close(t(8, 512, 1024), t(8, 1024, 1024)));
    }

    #[test]
    fn the_form_decides_the_grid() {
        let c = made_up();
        // A transposed weight (F.linear's) is another form: not calibrated here.
        assert!(c.time_s(&addmm(8, 1024, 1024, json!([1, 1024]))).is_none());
        assert_eq!(addmm(8, 1024, 1024, json!([1, 1024])).key.layout, "nt");
        // Unaligned N (not a multiple of 16 bytes): its own class, read from the aligned grid
        // only when the calibration has no unaligned one.
        let odd = addmm(8, 1024, 1023, json!([1023, 1]));
        assert!(!odd.key.aligned);
        assert!(c.time_s(&odd).is_some());
        // bf16 products read the fp16 grid; fp32 never does.
        let mm = |t: &str| {
            let types = vec![t.to_string(), t.to_string()];
            op_shape(
                "aten::mm",
                json!([[8, 1024], [1024, 1024]]).as_array().unwrap(),
                &types,
                json!([[1024, 1], [1, 1024]]).as_array().unwrap(),
            )
            .unwrap()
        };
        assert!(close(c.time_s(&mm("c10::BFloat16")).unwrap(), 3e-6));
        assert!(c.time_s(&mm("float")).is_none());
        // Row ops: rows are every dimension but the last.
        let types = vec!["float".to_string(), "Scalar".to_string()];
        let g = op_shape("aten::gelu", json!([[8, 8, 1, 1024], []]).as_array().unwrap(), &types, &[]).unwrap();
        assert_eq!((g.key.op.as_str(), g.dims.clone()), ("aten::gelu/1", vec![64.0, 1024.0]));
        assert!(close(c.time_s(&g).unwrap(), 2e-6));
        // A broadcast operand first (RMSNorm's weight times the activations): the op's size is
        // the largest tensor's.
        let types = vec!["float".to_string(), "float".to_string()];
        let m = op_shape("aten::mul", json!([[1024], [64, 1, 1024]]).as_array().unwrap(), &types, &[]).unwrap();
        assert_eq!((m.key.op.as_str(), m.dims.clone()), ("aten::mul/2", vec![64.0, 1024.0]));
        // No strides recorded: a product's layout is unknown, so no form.
        let types: Vec<String> = vec!["float".into(); 2];
        assert!(op_shape("aten::mm", json!([[8, 64], [64, 64]]).as_array().unwrap(), &types, &[]).is_none());
        assert!(op_shape("aten::index_select", json!([[8, 64]]).as_array().unwrap(), &types, &[]).is_none());
    }

    #[test]
    fn a_corner_the_sweep_skipped_leaves_the_others() {
        let mut doc: Value = serde_json::from_str(
            r#"{"records": [
            {"name": "aten::bmm", "input_dims": [[8, 1, 64], [8, 64, 128]], "input_strides": [[64, 64, 1], [8192, 1, 64]], "input_types": ["float", "float"], "kernel_s": 2e-6},
            {"name": "aten::bmm", "input_dims": [[512, 1, 64], [512, 64, 128]], "input_strides": [[64, 64, 1], [8192, 1, 64]], "input_types": ["float", "float"], "kernel_s": 8e-6},
            {"name": "aten::bmm", "input_dims": [[8, 1, 64], [8, 64, 1024]], "input_strides": [[64, 64, 1], [65536, 1, 64]], "input_types": ["float", "float"], "kernel_s": 4e-6}
            ]}"#,
        )
        .unwrap();
        let c = LibraryCalibration::parse(doc.to_string().as_bytes(), "t").unwrap();
        let types: Vec<String> = vec!["float".into(); 2];
        let at = |count: u64, n: u64| {
            let dims = json!([[count, 1, 64], [count, 64, n]]);
            let strides = json!([[64, 64, 1], [n * 64, 1, 64]]);
            c.time_s(&op_shape("aten::bmm", dims.as_array().unwrap(), &types, strides.as_array().unwrap()).unwrap())
                .unwrap()
        };
        assert!(close(at(8, 1024), 4e-6));
        // (512, 1024) was never measured: the three others, weighted as the grid places them.
        let t = at(64, 362);
        assert!(t > 2e-6 && t < 8e-6, "{t}");
        // A file with no calibrated record is refused with its name.
        doc["records"] = json!([]);
        let e = LibraryCalibration::parse(doc.to_string().as_bytes(), "empty.json").unwrap_err();
        assert!(e.contains("empty.json"), "{e}");
    }
}
