//! Tests of slice_frames.rs: a synthetic residue function whose frame share is linear in the
//! frame (each page left out and predicted from the others' shares alone), and the H200's eight
//! adjacent pages (results/h200/l2-partition/map8) and the pages on other frames of
//! results/h200/l2-slices-frames read through the full page's model.

use super::h200_maps::h200;
use super::slice_frames::*;
use super::slice_mod::fit_residue;
use super::synthetic_frames::{pages, PARTITION};

#[test]
fn a_frame_share_linear_in_the_frame_predicts_pages_left_out() {
    let model = fit_residue(&pages(0x4000, 1, "bits:8+10-20"), PARTITION, 8).unwrap();
    let run = pages(0x7771, 12, "random:96");
    let (per_page, all) = held_out_frames(&model, &run, 5);
    // Frame bits 0-3 vary over the 12 pages (0x7771..0x777c): a page is predicted from the other
    // eleven's shares alone, unless the fits of the first frame disagree on it (the last page).
    let predicted = all.total - all.unpredicted;
    assert!(predicted >= 10 * 96, "{per_page:?}");
    assert!(all.right as f64 > 0.99 * predicted as f64, "{per_page:?}");
}

#[test]
fn the_h200_pages_left_out_are_predicted_from_the_others_shares() {
    let model = fit_residue(&h200("full"), PARTITION, 8).unwrap();
    let (per_page, all) = held_out_frames(&model, &h200("map8"), 4);
    // Pages 0-6 from the other seven pages' shares alone (no line of the page itself); page 7 is
    // the only one whose frame sets bit 3 (the first frame is 1 modulo 8), so the others cannot
    // say what that bit flips: not predicted.
    assert_eq!(per_page[7].1.unpredicted, 64, "{per_page:?}");
    let predicted = all.total - all.unpredicted;
    assert_eq!(predicted, 448);
    assert!(all.right as f64 >= 0.95 * predicted as f64, "{per_page:?}");
}

#[test]
fn the_h200_frames_maps_pages_left_out_are_predicted_from_the_others_shares() {
    // 16 consecutive pages and 8 pages 4 GiB on (other processes and machine starts), 512 lines a
    // page: every page whose frame bits the other pages vary is predicted from their shares alone,
    // every line right; the last page of each sets a frame bit (4, 3) no other page sets.
    let model = fit_residue(&h200("full"), PARTITION, 8).unwrap();
    for (name, pages, bits) in [("grid16", 16, 5), ("skip8", 8, 4)] {
        let (per_page, all) = held_out_frames(&model, &h200(name), bits);
        assert_eq!(per_page.len(), pages);
        for (page, h) in &per_page[..pages - 1] {
            assert_eq!((h.right, h.total), (512, 512), "{name} page {page}: {h:?}");
        }
        assert_eq!(per_page[pages - 1].1.unpredicted, 512, "{name}: {all:?}");
    }
}
