//! The agent's IMDS side driven against the simulator (adze-imds-sim): token rules, faults,
//! and notices decided on exactly once.

use std::time::{Duration, Instant};

use adze_agent::agent::poll;
use adze_agent::decide::{Action, Memory, Policy, decide};
use adze_agent::imds::{Imds, ImdsConfig, ImdsError};
use adze_agent::notice::SPOT_PATH;
use adze_imds_sim::{FaultKind, FaultRequest, MaintenanceRequest, Sim, SpotRequest};

async fn start(ttl: u64, timeout_ms: u64) -> (Sim, Imds) {
    let sim = Sim::default();
    let (addr, _task) = sim.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let imds = Imds::new(ImdsConfig {
        endpoint: format!("http://{addr}"),
        token_ttl: Duration::from_secs(ttl),
        timeout: Duration::from_millis(timeout_ms),
    })
    .unwrap();
    (sim, imds)
}

fn fault(sim: &Sim, kind: FaultKind, seconds: f64, delay_ms: u64) {
    sim.fault(&FaultRequest {
        kind,
        seconds,
        delay_ms,
    });
}

#[tokio::test]
async fn token_is_reused_across_polls() {
    let (sim, imds) = start(21600, 1000).await;
    for _ in 0..5 {
        assert_eq!(poll(&imds).await.unwrap(), Default::default());
    }
    let s = sim.stats();
    assert_eq!(s.token_requests, 1, "{s:?}");
    assert_eq!(s.metadata_requests, 15);
    assert_eq!(s.unauthorized, 0);
}

#[tokio::test]
async fn revoked_token_is_fetched_again_on_401() {
    let (sim, imds) = start(21600, 1000).await;
    poll(&imds).await.unwrap();
    sim.expire_tokens();
    assert!(
        imds.get("/latest/meta-data/instance-id")
            .await
            .unwrap()
            .is_some()
    );
    let s = sim.stats();
    assert_eq!(s.token_requests, 2);
    assert_eq!(s.unauthorized, 1);
}

#[tokio::test]
async fn short_lived_token_is_renewed_before_it_expires() {
    let (sim, imds) = start(2, 1000).await;
    imds.get("/latest/meta-data/instance-id").await.unwrap();
    tokio::time::sleep(Duration::from_millis(1700)).await;
    imds.get("/latest/meta-data/instance-id").await.unwrap();
    let s = sim.stats();
    assert_eq!(s.token_requests, 2, "renewed early: {s:?}");
    assert_eq!(s.unauthorized, 0, "never sent an expired token: {s:?}");
}

#[tokio::test]
async fn forced_401_is_an_error_not_a_retry_loop() {
    let (sim, imds) = start(21600, 1000).await;
    fault(&sim, FaultKind::Unauthorized, 5.0, 0);
    let err = imds.get(SPOT_PATH).await.unwrap_err();
    assert!(
        matches!(err, ImdsError::Status { status: 401, .. }),
        "{err}"
    );
    assert!(sim.stats().token_requests <= 1);
}

#[tokio::test]
async fn unavailable_imds_fails_polls_then_recovers() {
    let (sim, imds) = start(21600, 1000).await;
    fault(&sim, FaultKind::Unavailable, 1.0, 0);
    let err = poll(&imds).await.unwrap_err();
    assert!(
        matches!(err, ImdsError::Status { status: 503, .. }),
        "{err}"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    sim.spot(&SpotRequest {
        action: "terminate".into(),
        deadline_seconds: 120,
        after_seconds: 0.0,
    });
    let obs = poll(&imds).await.unwrap();
    assert!(obs.spot.is_some(), "the notice is seen once IMDS is back");
}

#[tokio::test]
async fn hung_and_slow_imds_are_bounded_by_the_timeout() {
    let (sim, imds) = start(21600, 300).await;
    imds.get(SPOT_PATH).await.unwrap();
    fault(&sim, FaultKind::Hang, 10.0, 0);
    let t = Instant::now();
    let err = poll(&imds).await.unwrap_err();
    assert!(matches!(err, ImdsError::Timeout { .. }), "{err}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    fault(&sim, FaultKind::Slow, 10.0, 100);
    assert!(
        poll(&imds).await.is_ok(),
        "100 ms answers fit a 300 ms bound"
    );
}

#[tokio::test]
async fn spot_notice_is_acted_on_once_even_when_the_token_expires_mid_drain() {
    let (sim, imds) = start(21600, 1000).await;
    let deadline = sim.spot(&SpotRequest {
        action: "terminate".into(),
        deadline_seconds: 120,
        after_seconds: 0.0,
    });
    let now = chrono::Utc::now();
    let mut mem = Memory::default();
    let actions = decide(&poll(&imds).await.unwrap(), &mem, &Policy::default(), now);
    let [Action::BeginDrain(rec)] = &actions[..] else {
        panic!("expected one drain, got {actions:?}")
    };
    assert_eq!(rec.event, format!("spot/{deadline}"));
    mem.drain = Some(rec.clone());
    sim.expire_tokens();
    for _ in 0..3 {
        let obs = poll(&imds).await.unwrap();
        assert!(obs.spot.is_some());
        assert!(decide(&obs, &mem, &Policy::default(), now).is_empty());
    }
    assert_eq!(sim.stats().token_requests, 2);
}

#[tokio::test]
async fn maintenance_event_appears_at_its_trigger_time() {
    let (sim, imds) = start(21600, 1000).await;
    sim.maintenance(&MaintenanceRequest {
        event_id: "e1".into(),
        code: "system-reboot".into(),
        state: "active".into(),
        not_before_seconds: 300,
        duration_seconds: 600,
        after_seconds: 0.5,
    });
    assert!(poll(&imds).await.unwrap().maintenance.is_empty());
    tokio::time::sleep(Duration::from_millis(600)).await;
    let obs = poll(&imds).await.unwrap();
    assert_eq!(obs.maintenance.len(), 1);
    let a = decide(
        &obs,
        &Memory::default(),
        &Policy::default(),
        chrono::Utc::now(),
    );
    assert!(
        matches!(&a[..], [Action::BeginDrain(r)] if !r.interrupted && r.reason == "ScheduledMaintenance")
    );
}
