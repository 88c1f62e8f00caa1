//! Plateau and knee detection on a latency-versus-footprint curve (seed 000 appendix: a chase
//! whose lines fit a level returns that level's hit latency; overflow shows as a step).

/// One detected level of a hierarchy on a latency-versus-footprint curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Typical latency of the plateau (median of its points), in the curve's y unit.
    pub latency: f64,
    /// Spread (MAD) of the plateau's points.
    pub latency_mad: f64,
    /// First and last footprint (x) of the points that belong to the plateau.
    pub x_first: f64,
    pub x_last: f64,
    /// Estimated capacity: the footprint where this level ends (the knee), None for the last level.
    pub capacity: Option<f64>,
    /// Indices of the points in the plateau.
    pub points: std::ops::Range<usize>,
}

/// Segment a curve (x ascending) into plateaus. Placeholder: the real algorithm is being written.
pub fn detect_plateaus(x: &[f64], y: &[f64], min_step_ratio: f64) -> Vec<Plateau> {
    let _ = (x, y, min_step_ratio);
    Vec::new()
}
