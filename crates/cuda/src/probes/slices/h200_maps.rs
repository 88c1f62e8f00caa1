//! The committed H200 slice maps as the tests read them (results/h200: l2-slices-grid from SM 0
//! unless named, l2-partition/map8, l2-slices-frames on other frames, l2-slices-function the
//! probe's own map), by the name their READMEs give.

use super::slice_fit::{points_from_map, Point};

/// The labelled lines of the map `name`; panics on an unknown name (a test's typo).
pub fn h200(name: &str) -> Vec<Point> {
    use std::io::Read;
    let bytes: &[u8] = match name {
        "sm0a" => include_bytes!("../../../../../results/h200/l2-slices-grid/sm0a-map.json.gz"),
        "sm0b" => include_bytes!("../../../../../results/h200/l2-slices-grid/sm0b-map.json.gz"),
        "sm0c" => include_bytes!("../../../../../results/h200/l2-slices-grid/sm0c-map.json.gz"),
        "sm2" => include_bytes!("../../../../../results/h200/l2-slices-grid/sm2-map.json.gz"),
        "full" => include_bytes!("../../../../../results/h200/l2-slices-grid/full-map.json.gz"),
        "map8" => include_bytes!("../../../../../results/h200/l2-partition/map8/map.json.gz"),
        "pair" => include_bytes!("../../../../../results/h200/l2-slices-frames/pair-map.json.gz"),
        "skip" => include_bytes!("../../../../../results/h200/l2-slices-frames/skip-map.json.gz"),
        "grid16" => include_bytes!("../../../../../results/h200/l2-slices-frames/grid16-map.json.gz"),
        "skip8" => include_bytes!("../../../../../results/h200/l2-slices-frames/skip8-map.json.gz"),
        "function" => include_bytes!("../../../../../results/h200/l2-slices-function/map.json.gz"),
        other => panic!("no committed H200 map named {other:?}"),
    };
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut json).unwrap();
    points_from_map(&serde_json::from_slice(&json).unwrap()).unwrap()
}
