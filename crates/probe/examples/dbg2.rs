use memscope_core::Target;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let mut t = memscope_sim::SimTarget::from_json_file(std::path::Path::new(&path)).unwrap();
    let buf = t.alloc((4096u64 << 4) * 512 + (1 << 16)).unwrap();
    let mut m = memscope_probe::measure::Meter::new(&mut t, 21);
    let calib: Vec<u64> = (0..8).map(|i| buf.base + i * 512).collect();
    let levels = memscope_probe::evset::calibrate_l1(&mut m, &calib).unwrap();
    println!("{levels:?}");
    let o = memscope_probe::evset::Oracle { path: memscope_core::CachePath::L1Cached, levels, threshold: 0.5 };
    let pool: Vec<u64> = (0..4096u64).map(|i| buf.base + i * 512).collect();
    let r = memscope_probe::evset::reduce_groups(&mut m, &o, &pool, 20000);
    println!("{:?}", r.map(|r| (r.set.len(), r.chases)));
    for n in [0usize; 0] {
        let pool: Vec<u64> = (0..n as u64).map(|i| buf.base + i * 512).collect();
        println!("n {n}: {:?}", o.misses(&mut m, &pool).unwrap());
    }
}
#[allow(dead_code)]
fn x() {}
