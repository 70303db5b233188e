//! The metrics endpoint: `GET /metrics` (Prometheus text) and `GET /healthz` — 200 once every
//! bridge is connected and the store answers, 503 with the reason otherwise (a load balancer
//! or Docker's `HEALTHCHECK` reads the status; an operator reads the reason).

use crate::store::Store;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::registry::Registry;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tollgate_surface::{Bridge, Platform};

/// What `/healthz` looks at.
pub struct Health {
    store: Arc<dyn Store>,
    /// How many bridges this process starts.
    expected: usize,
    /// Those connected so far (added as each connects).
    bridges: Mutex<Vec<Arc<dyn Bridge>>>,
    /// Why a bridge could not start, if one could not.
    failed: Mutex<Option<String>>,
}

impl Health {
    #[must_use]
    pub fn new(store: Arc<dyn Store>, expected: usize) -> Self {
        Health {
            store,
            expected,
            bridges: Mutex::default(),
            failed: Mutex::default(),
        }
    }

    /// A bridge that could not connect at start: unhealthy from now on, saying why (the
    /// others still serve).
    pub fn failed(&self, platform: Platform, why: &str) {
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!(
            "the {} bridge did not start: {why}",
            platform.as_str()
        ));
    }

    /// A bridge that connected at start (it may drop later: it is asked at every check).
    pub fn add(&self, bridge: Arc<dyn Bridge>) {
        self.lock().push(bridge);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<dyn Bridge>>> {
        // A poisoned lock still holds a whole list (each change is one push).
        self.bridges.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Ok` when healthy, else what is not.
    pub fn check(&self) -> Result<(), String> {
        if let Some(why) = self
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Err(why);
        }
        let bridges = self.lock().clone();
        if bridges.len() < self.expected {
            return Err(format!(
                "{} of {} bridges connected so far (starting)",
                bridges.len(),
                self.expected
            ));
        }
        for bridge in &bridges {
            if !bridge.connected() {
                return Err(format!(
                    "the {} bridge is not connected",
                    bridge.platform().as_str()
                ));
            }
        }
        self.store
            .get(crate::store::migrate::META_TREE, b"health")
            .map(|_| ())
            .map_err(|e| format!("the store does not answer: {e}"))
    }
}

/// Serves `/metrics` and `/healthz` on `listener` until the process ends.
pub async fn serve(listener: TcpListener, registry: Registry, health: Arc<Health>) {
    let registry = Arc::new(registry);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors, most likely: back off rather than spin.
                tracing::warn!(target: "tollgate::serve", "metrics endpoint: accepting: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (registry, health) = (registry.clone(), health.clone());
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<_>| {
                let response = respond(&request, &registry, &health);
                async move { Ok::<_, Infallible>(response) }
            });
            // A client that hangs up mid-request is its own business.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

fn respond<B>(request: &Request<B>, registry: &Registry, health: &Health) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => match super::render(registry) {
            Ok(text) => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                text,
            ),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain; charset=utf-8",
                format!("rendering the metrics: {e}\n"),
            ),
        },
        (&Method::GET, "/healthz") => match health.check() {
            Ok(()) => (StatusCode::OK, "text/plain; charset=utf-8", "ok\n".into()),
            Err(why) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain; charset=utf-8",
                format!("not ready: {why}\n"),
            ),
        },
        (_, "/metrics" | "/healthz") => (
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "only GET\n".into(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "tollgate serves /metrics and /healthz here\n".into(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}
