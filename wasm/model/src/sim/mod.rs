//! A discrete-event simulator of workers serving one port: why load is
//! uneven, and what each accept model does about it.
//!
//! Seeded and deterministic, with no clocks: the same [`Scenario`] gives the
//! same [`SimReport`], natively and in wasm. The reuseport models ask the
//! model's own selection ([`crate::ReuseportGroup`]) which listener each SYN
//! goes to, for the scenario's kernel; the shared-socket models follow the
//! wake-up rules of `inet_csk_wait_for_connect` and `fs/eventpoll.c`, and
//! nginx's `accept_mutex`. What is assumed rather than the kernel's is listed
//! in [`engine`].
//!
//! - [`spec`]: the scenario, with a bound on every field;
//! - [`accept`]: the accept models as data, a row of rules each;
//! - [`engine`]: the run, stepped in slices so a caller can show progress
//!   and stop;
//! - [`report`]: what it measures;
//! - [`curated`]: the gallery's scenarios, which the agent also runs on the
//!   real kernel;
//! - [`matcher`]: which of them looks like what a user observed;
//! - [`calibrate`]: the simulator's free parameters fitted to recorded runs.

pub mod accept;
pub mod calibrate;
pub mod curated;
pub mod engine;
pub mod matcher;
pub mod report;
pub mod rng;
pub mod spec;

pub use curated::{Curated, Variant, CURATED};
pub use engine::{ConnView, Simulation};
pub use report::{Latency, Outcomes, Series, SimReport, WorkerReport};
pub use spec::{
    AcceptModel, Arrivals, Clients, Event, Params, Requests, Scenario, Service, ServiceDist,
    SimError, SlowWorker,
};

/// Checks a scenario and runs it to the end.
pub fn simulate(s: Scenario) -> Result<SimReport, SimError> {
    let mut sim = Simulation::new(s.check()?);
    sim.run();
    Ok(sim.report())
}
