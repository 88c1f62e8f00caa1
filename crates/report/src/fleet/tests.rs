//! Tests of the fleet merge and analysis on the sample document.

use super::*;
use memscope_results::merge::merge;
use serde_json::json;

fn member(host: &str, tweak: impl FnOnce(&mut Results)) -> Results {
    let mut r = memscope_results::sample::results();
    r.environment.insert("host".into(), json!(host));
    tweak(&mut r);
    r
}

fn scale(r: &mut Results, key: &str, by: f64) {
    let f = r.findings.get_mut(key).unwrap();
    f.value = json!(f.value.as_f64().unwrap() * by);
}

fn fleet_of(docs: Vec<Results>) -> Results {
    let tool = memscope_results::sample::results().tool;
    let inputs = docs.into_iter().enumerate().map(|(i, d)| (format!("f{i}.json"), d)).collect();
    merge(inputs, tool, "2026-12-01T00:00:00Z")
}

#[test]
fn merge_keeps_every_member_and_labels_never_collide() {
    let other_gpu = member("h2", |r| {
        r.target.id = "sim:other".into();
        r.targets[0].id = "sim:other".into();
    });
    let docs = vec![member("h1", |_| {}), member("h1", |_| {}), member("h2", |_| {}), other_gpu];
    let m = fleet_of(docs);
    assert_eq!(m.fleet.len(), 4);
    let ids: Vec<&str> = m.targets.iter().map(|t| t.id.as_str()).collect();
    // (a second run of the same target on one host gets #2; another target of the host does not)
    assert_eq!(ids, ["h1/sim:fixture", "h1#2/sim:fixture", "h2/sim:fixture", "h2/sim:other"]);
    assert_eq!(m.target.kind, "fleet");
    assert!(m.findings.is_empty());
    // every finding of every member is kept, under its own key, in its member document
    for f in &m.fleet {
        assert_eq!(f.results.findings, memscope_results::sample::results().findings);
    }
    // a merged file round-trips through the loader and merges again without change of members
    let bytes = memscope_results::json::to_bytes(&m);
    let back = Results::from_json(&bytes).unwrap();
    // (serde_json's float parsing may move a last digit, so the structure is compared)
    let ids_back: Vec<&str> = back.targets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids_back, ids);
    for (a, b) in back.fleet.iter().zip(&m.fleet) {
        assert_eq!((&a.id, &a.host, &a.source), (&b.id, &b.host, &b.source));
        assert!(a.results.findings.keys().eq(b.results.findings.keys()));
        assert_eq!(a.results.number("l2.hit_latency_ns"), b.results.number("l2.hit_latency_ns"));
    }
    let again = merge(vec![("m.json".into(), back.clone())], m.tool.clone(), "t");
    assert!(again.fleet == back.fleet, "merging a merged file changed its members");
}

#[test]
fn scheduler_rank_names_the_member() {
    let r = member("node7", |r| {
        r.environment.insert("scheduler".into(), json!({"kind": "slurm", "rank": 3, "job_id": "991"}));
    });
    let m = fleet_of(vec![r]);
    assert_eq!(m.fleet[0].id, "node7-rank3");
    assert_eq!(m.fleet[0].rank, Some(3));
    assert_eq!(m.fleet[0].job.as_deref(), Some("991"));
}

#[test]
fn the_slowed_member_is_flagged_and_nothing_else() {
    let docs = vec![
        member("a", |r| scale(r, "l2.hit_latency_ns", 1.01)),
        member("b", |_| {}),
        member("c", |r| {
            scale(r, "l2.hit_latency_ns", 1.08);
            scale(r, "bw.read_bytes_per_s", 0.9);
            // faster is not an outlier
            scale(r, "dram.latency_ns", 0.8);
        }),
        member("d", |r| {
            scale(r, "l1.hit_latency_ns", 0.97);
            r.findings.get_mut("l2.ways").unwrap().value = json!(12);
        }),
    ];
    let f = analyse(&fleet_of(docs).fleet, 0.05);
    assert_eq!(f.groups.len(), 1);
    let mut got: Vec<(String, String, Flag)> = f
        .outliers()
        .into_iter()
        .map(|(_, r, c)| (f.units[c.unit].label.clone(), r.key.clone(), c.flag.unwrap()))
        .collect();
    got.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        got,
        [
            ("c/sim:fixture".to_string(), "bw.read_bytes_per_s".to_string(), Flag::Worse),
            ("c/sim:fixture".to_string(), "l2.hit_latency_ns".to_string(), Flag::Worse),
            ("d/sim:fixture".to_string(), "l2.ways".to_string(), Flag::Differs),
        ]
    );
    let l2 = f.groups[0].rows.iter().find(|r| r.key == "l2.hit_latency_ns").unwrap();
    // values 1.01, 1.0, 1.08, 1.0 times 127.4: median 1.005 x
    assert!((l2.median.unwrap() - 127.4 * 1.005).abs() < 1e-9);
    let ranks: Vec<_> = l2.cells.iter().map(|c| c.rank.unwrap()).collect();
    assert_eq!(ranks, [3, 1, 4, 1]);
    let bw = f.groups[0].rows.iter().find(|r| r.key == "bw.read_bytes_per_s").unwrap();
    assert_eq!(bw.cells.iter().map(|c| c.rank.unwrap()).collect::<Vec<_>>(), [1, 1, 4, 1]);
    let t = crate::fleet_view::text(&f);
    assert!(t.contains("outliers (3):"), "{t}");
    assert!(t.contains("c/sim:fixture: l2.hit_latency_ns"), "{t}");
    let h = crate::fleet_view::html(&f);
    assert_eq!(h.matches("data-outlier=\"worse\"").count(), 2);
    assert_eq!(h.matches("data-outlier=\"differs\"").count(), 1);
}

#[test]
fn models_are_grouped_and_two_members_are_never_flagged() {
    let other = member("x", |r| {
        r.target.name = "another GPU".into();
        r.targets[0].name = "another GPU".into();
        scale(r, "l2.hit_latency_ns", 2.0);
    });
    let f = analyse(&fleet_of(vec![member("a", |_| {}), other, member("b", |_| {})]).fleet, 0.05);
    assert_eq!(f.groups.iter().map(|g| g.units.len()).collect::<Vec<_>>(), [2, 1]);
    assert!(f.outliers().is_empty());
    assert!(crate::fleet_view::text(&f).contains("no outliers"));
}
