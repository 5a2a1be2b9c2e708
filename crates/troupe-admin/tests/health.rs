//! Health without a cluster: alive, never ready (503 with the reason).

mod common;

use common::request;
use troupe_admin::AdminServer;

#[test]
fn alive_without_token_not_ready_without_cluster() {
    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .start()
        .unwrap();
    let a = request(s.addr(), "GET", "/health/alive", &[], b"");
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["alive"], true);
    let a = request(s.addr(), "GET", "/health/ready", &[], b"");
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(a.json()["reason"].as_str().unwrap().contains("no cluster"));
    let addr = s.addr();
    s.stop();
    // The listener closes once the server task sees the stop.
    let closed = (0..500).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(10));
        std::net::TcpStream::connect(addr).is_err()
    });
    assert!(closed, "still serving after stop");
}
