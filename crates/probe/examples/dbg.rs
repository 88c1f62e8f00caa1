use memscope_core::Target;
fn main() {
    let mut t = memscope_sim::SimTarget::from_preset("rtx4090").unwrap();
    let buf = t.alloc(8 << 20).unwrap();
    let x = buf.base.div_ceil(2 << 20) * (2 << 20);
    let y = x + 0x5ad00;
    t.flush().unwrap();
    let m = t.machine();
    let a = m.load(0, x, 8, true, 1000.0);
    let b = m.load(0, y, 8, true, 1000.0);
    println!("{:?}\n{:?}", a, b);
}
