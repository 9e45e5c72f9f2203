//! How the processes of a multi-GPU run meet: rank 0 makes NCCL's unique id (128 opaque bytes)
//! and hands it to every other rank, through a file every rank sees ([`Rendezvous::File`]) or
//! over TCP ([`Rendezvous::Tcp`]: rank 0 listens where it is told, the others connect). Which rank
//! a process is, and where rank 0 is, come from the caller or from a launcher's variables
//! ([`Launch::from_vars`]: torchrun, Slurm, Open MPI, MPICH); this module reads no environment
//! itself.
//!
//! The TCP exchange is the whole protocol, and the listener does nothing else:
//! - a rank connects (retrying until rank 0 listens, up to the timeout) and sends a 20-byte hello:
//!   the magic `matmulid`, then its rank, the world size and the round (which exchange of the run
//!   this is), each a little-endian u32;
//! - rank 0 reads exactly those 20 bytes (a connection that sends fewer within [`HELLO_TIMEOUT`]
//!   is dropped), checks the magic, the world, the round, and that the rank is in 1..world and
//!   not seen before; a hello that fails any check is refused (the connection closed, nothing
//!   sent) and reported to the caller's log; a good one gets the magic and the 128-byte id;
//! - rank 0 stops listening once every other rank has its id, or fails after the timeout naming
//!   the ranks that never came.
//!
//! The id lets a process join the run's communicator: whoever can reach the listener can ask for
//! it. Bind it to an interface only the run's hosts reach (the default: the master address
//! itself, not every interface).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The bytes of an NCCL unique id.
pub const ID_BYTES: usize = 128;
/// An NCCL unique id as bytes.
pub type IdBytes = [u8; ID_BYTES];

const MAGIC: &[u8; 8] = b"matmulid";
const HELLO_BYTES: usize = 20;
/// How long rank 0 waits for a connection's hello before dropping it.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the ranks of a run meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rendezvous {
    /// Rank 0 writes the id to this path (a file system every rank sees; absent before the
    /// run); the others wait for it.
    File(PathBuf),
    /// Rank 0 listens on `bind` (default: `master` itself) and the others connect to `master`
    /// (`host:port`).
    Tcp {
        /// Rank 0's address as the other ranks reach it, `host:port`.
        master: String,
        /// Where rank 0 listens, when not `master` (an interface address and the port).
        bind: Option<String>,
    },
}

impl Rendezvous {
    /// The rendezvous of exchange number `round` of a run (each communicator needs a fresh id):
    /// a file form gets `.round` appended; TCP tells the rounds apart in the hello.
    pub fn for_round(&self, round: u32) -> Rendezvous {
        match self {
            Rendezvous::File(p) => {
                Rendezvous::File(PathBuf::from(format!("{}.{round}", p.display())))
            }
            tcp => tcp.clone(),
        }
    }
}

/// Gives every rank of `world` the id rank 0 makes with `make_id`, through `rendezvous`;
/// `round` numbers the exchanges of one run (the same on every rank). Rank 0 returns once every
/// other rank has the id; the others once they have it. `log` receives what rank 0 refused.
pub fn exchange(
    rendezvous: &Rendezvous,
    rank: usize,
    world: usize,
    round: u32,
    timeout: Duration,
    make_id: impl FnOnce() -> Result<IdBytes>,
    log: &mut dyn FnMut(String),
) -> Result<IdBytes> {
    if world < 2 || rank >= world {
        return Err(Error::Invalid(format!(
            "rank {rank} of {world}: the world must be at least 2 and the rank below it"
        )));
    }
    match rendezvous {
        Rendezvous::File(path) => by_file(path, rank, world, timeout, make_id),
        Rendezvous::Tcp { master, bind } => {
            if rank == 0 {
                let id = make_id()?;
                let at = bind.as_deref().unwrap_or(master);
                let listener = listen(at)?;
                serve(&listener, world, round, &id, timeout, log)?;
                Ok(id)
            } else {
                fetch(master, rank, world, round, timeout)
            }
        }
    }
}

fn by_file(
    path: &std::path::Path,
    rank: usize,
    world: usize,
    timeout: Duration,
    make_id: impl FnOnce() -> Result<IdBytes>,
) -> Result<IdBytes> {
    let io = |what: &str, e: std::io::Error| Error::Cuda {
        context: format!("rank {rank}: {what} {}", path.display()),
        message: e.to_string(),
    };
    if rank == 0 {
        if path.exists() {
            return Err(Error::Invalid(format!(
                "the id file {} exists already: remove it (each run needs a fresh one)",
                path.display()
            )));
        }
        let id = make_id()?;
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, id).map_err(|e| io("writing", e))?;
        std::fs::rename(&tmp, path).map_err(|e| io("renaming onto", e))?;
        return Ok(id);
    }
    let start = Instant::now();
    loop {
        if let Ok(bytes) = std::fs::read(path) {
            if let Ok(id) = IdBytes::try_from(bytes.as_slice()) {
                return Ok(id);
            }
        }
        if start.elapsed() > timeout {
            return Err(Error::Cuda {
                context: format!("rank {rank} of {world}"),
                message: format!(
                    "rank 0 did not write the unique id to {} within {timeout:?}",
                    path.display()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first address `at` (`host:port`) resolves to.
fn resolve(at: &str) -> Result<SocketAddr> {
    at.to_socket_addrs()
        .map_err(|e| Error::Invalid(format!("the rendezvous address `{at}`: {e}")))?
        .next()
        .ok_or_else(|| Error::Invalid(format!("the rendezvous address `{at}` resolves to nothing")))
}

/// Rank 0's listener on `at` (`host:port`; port 0 picks a free one).
pub fn listen(at: &str) -> Result<TcpListener> {
    let addr = resolve(at)?;
    TcpListener::bind(addr).map_err(|e| Error::Cuda {
        context: format!("rank 0: listening on {addr} for the other ranks"),
        message: if e.kind() == std::io::ErrorKind::AddrInUse {
            format!(
                "{e}: another program holds the port (under torchrun its agent's store may hold \
                 MASTER_PORT): give a free one"
            )
        } else {
            e.to_string()
        },
    })
}

/// Serves `id` on `listener` to the `world − 1` other ranks of exchange `round`: returns when
/// each has it, fails after `timeout` naming the ranks that never came. What it refuses goes to
/// `log`.
pub fn serve(
    listener: &TcpListener,
    world: usize,
    round: u32,
    id: &IdBytes,
    timeout: Duration,
    log: &mut dyn FnMut(String),
) -> Result<()> {
    let here = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "its address".into());
    let fail = |message: String| Error::Cuda {
        context: format!("rank 0 of {world}: serving the NCCL id on {here}"),
        message,
    };
    listener
        .set_nonblocking(true)
        .map_err(|e| fail(e.to_string()))?;
    let deadline = Instant::now() + timeout;
    let mut served = vec![false; world];
    served[0] = true;
    while served.iter().any(|s| !s) {
        match listener.accept() {
            Ok((stream, peer)) => match greet(stream, world, round, &served, id) {
                Ok(rank) => served[rank] = true,
                Err(why) => log(format!("rank 0: refused {peer}: {why}")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    let missing: Vec<String> = (0..world)
                        .filter(|&r| !served[r])
                        .map(|r| r.to_string())
                        .collect();
                    return Err(fail(format!(
                        "rank(s) {} did not connect within {timeout:?}",
                        missing.join(", ")
                    )));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    Ok(())
}

/// Reads one hello from `stream` and, if it is a rank of this exchange not served yet, sends
/// the id: that rank; else why not (nothing is sent).
fn greet(
    mut stream: TcpStream,
    world: usize,
    round: u32,
    served: &[bool],
    id: &IdBytes,
) -> std::result::Result<usize, String> {
    let setup = |e: std::io::Error| e.to_string();
    stream.set_nonblocking(false).map_err(setup)?;
    stream
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .map_err(setup)?;
    stream
        .set_write_timeout(Some(HELLO_TIMEOUT))
        .map_err(setup)?;
    let mut hello = [0u8; HELLO_BYTES];
    stream
        .read_exact(&mut hello)
        .map_err(|e| format!("no {HELLO_BYTES}-byte hello ({e})"))?;
    if &hello[..8] != MAGIC {
        return Err("not a matmul rank (wrong magic)".into());
    }
    let word = |i: usize| u32::from_le_bytes(hello[i..i + 4].try_into().expect("4 bytes")) as usize;
    let (rank, their_world, their_round) = (word(8), word(12), word(16));
    if their_world != world {
        return Err(format!("a rank of a world of {their_world}, not {world}"));
    }
    if their_round != round as usize {
        return Err(format!("exchange {their_round}, not {round}"));
    }
    if rank == 0 || rank >= world {
        return Err(format!("rank {rank} is not one of 1..{world}"));
    }
    if served[rank] {
        return Err(format!("rank {rank} has its id already"));
    }
    let mut reply = Vec::with_capacity(8 + ID_BYTES);
    reply.extend_from_slice(MAGIC);
    reply.extend_from_slice(id);
    stream
        .write_all(&reply)
        .map_err(|e| format!("rank {rank}: sending the id: {e}"))?;
    Ok(rank)
}

/// A rank's side: connects to `master` (retrying until rank 0 listens), says who it is and
/// reads the id, all within `timeout`.
pub fn fetch(
    master: &str,
    rank: usize,
    world: usize,
    round: u32,
    timeout: Duration,
) -> Result<IdBytes> {
    let fail = |message: String| Error::Cuda {
        context: format!("rank {rank} of {world}: fetching the NCCL id from rank 0 at {master}"),
        message,
    };
    let addr = resolve(master)?;
    let deadline = Instant::now() + timeout;
    let mut hello = Vec::with_capacity(HELLO_BYTES);
    hello.extend_from_slice(MAGIC);
    for v in [rank, world, round as usize] {
        let v = u32::try_from(v).map_err(|_| fail(format!("{v} does not fit the hello")))?;
        hello.extend_from_slice(&v.to_le_bytes());
    }
    let mut last = String::from("no attempt");
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(fail(format!("not reached within {timeout:?} ({last})")));
        }
        match TcpStream::connect_timeout(&addr, left.min(Duration::from_secs(2))) {
            Ok(mut stream) => {
                let left = deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1));
                let setup = |e: std::io::Error| fail(e.to_string());
                stream.set_read_timeout(Some(left)).map_err(setup)?;
                stream.set_write_timeout(Some(left)).map_err(setup)?;
                let mut reply = [0u8; 8 + ID_BYTES];
                let got = stream
                    .write_all(&hello)
                    .and_then(|_| stream.read_exact(&mut reply));
                match got {
                    Ok(()) if &reply[..8] == MAGIC => {
                        return Ok(reply[8..].try_into().expect("128 bytes"));
                    }
                    Ok(()) => return Err(fail("rank 0 answered with the wrong magic".into())),
                    // Refused (closed without the id): a listener of another exchange, or a
                    // rank already served; retrying cannot help.
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        return Err(fail(
                            "rank 0 refused this rank (another world size or exchange, or the \
                             same rank twice: see rank 0's log)"
                                .into(),
                        ));
                    }
                    Err(e) => last = e.to_string(),
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A process's place in a run, as a launcher gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank.
    pub rank: usize,
    /// The number of processes.
    pub world: usize,
    /// Its rank among the processes of its host (its GPU), when the launcher says.
    pub local_rank: Option<usize>,
    /// Rank 0's `host:port` (MASTER_ADDR and MASTER_PORT), when set.
    pub master: Option<String>,
    /// Which launcher's variables these were: `torchrun`, `slurm`, `open-mpi`, `mpich`.
    pub launcher: &'static str,
}

impl Launch {
    /// The run a launcher describes in its variables, read through `var` (the CLI passes the
    /// environment): torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK), Slurm (SLURM_PROCID,
    /// SLURM_NTASKS, SLURM_LOCALID), Open MPI (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK) or
    /// MPICH/PMI (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID), the first whose rank and size are both
    /// set; rank 0's address from MASTER_ADDR and MASTER_PORT under any of them. None when no
    /// launcher's pair is set; a value that is not a number, or a rank not below the size, is an
    /// error naming the variable.
    pub fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<Launch>> {
        const LAUNCHERS: [(&str, &str, &str, &str); 4] = [
            ("torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"),
            ("slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
            (
                "open-mpi",
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_LOCAL_RANK",
            ),
            ("mpich", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
        ];
        let number = |name: &str| -> Result<Option<usize>> {
            match var(name).filter(|v| !v.trim().is_empty()) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| {
                    Error::Invalid(format!("{name}={v:?} is not a non-negative whole number"))
                }),
            }
        };
        for (launcher, rank_var, size_var, local_var) in LAUNCHERS {
            let (Some(rank), Some(world)) = (number(rank_var)?, number(size_var)?) else {
                continue;
            };
            if rank >= world {
                return Err(Error::Invalid(format!(
                    "{rank_var}={rank} is not below {size_var}={world}"
                )));
            }
            let master = match (var("MASTER_ADDR"), number("MASTER_PORT")?) {
                (Some(addr), Some(port)) if !addr.trim().is_empty() => {
                    if port > u16::MAX as usize {
                        return Err(Error::Invalid(format!("MASTER_PORT={port} is not a port")));
                    }
                    Some(join_host_port(addr.trim(), port as u16))
                }
                _ => None,
            };
            return Ok(Some(Launch {
                rank,
                world,
                local_rank: number(local_var)?,
                master,
                launcher,
            }));
        }
        Ok(None)
    }
}

/// `host:port`, with an IPv6 literal in brackets.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn id() -> IdBytes {
        std::array::from_fn(|i| (i * 7 + 3) as u8)
    }

    /// Rank 0 serves `world − 1` threads over loopback (each its own connection, started before
    /// rank 0 listens, so they retry); every rank gets rank 0's id.
    fn run_world(world: usize, round: u32) -> Vec<IdBytes> {
        let listener = listen("127.0.0.1:0").unwrap();
        let master = listener.local_addr().unwrap().to_string();
        let clients: Vec<_> = (1..world)
            .map(|r| {
                let master = master.clone();
                std::thread::spawn(move || {
                    fetch(&master, r, world, round, Duration::from_secs(20)).unwrap()
                })
            })
            .collect();
        let mut log = Vec::new();
        serve(
            &listener,
            world,
            round,
            &id(),
            Duration::from_secs(20),
            &mut |m| log.push(m),
        )
        .unwrap();
        assert!(log.is_empty(), "{log:?}");
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    }

    #[test]
    fn every_rank_gets_rank_zeros_id_over_loopback() {
        for world in [2, 5] {
            let got = run_world(world, 3);
            assert_eq!(got.len(), world - 1);
            assert!(got.iter().all(|g| *g == id()));
        }
    }

    /// Strangers — wrong magic, silence, another world size, rank 0 or out of range, a rank
    /// twice, another exchange — are refused and logged, the id never sent to them, and the
    /// real ranks still get it.
    #[test]
    fn strangers_are_refused_and_logged() {
        let world = 3;
        let listener = listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let hello = |magic: &[u8; 8], rank: u32, w: u32, round: u32| {
            let mut h = magic.to_vec();
            for v in [rank, w, round] {
                h.extend_from_slice(&v.to_le_bytes());
            }
            h
        };
        let strangers: Vec<Vec<u8>> = vec![
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            hello(b"matmulid", 1, 4, 0),
            hello(b"matmulid", 0, 3, 0),
            hello(b"matmulid", 7, 3, 0),
            hello(b"matmulid", 2, 3, 9),
        ];
        let n = strangers.len();
        let probes = std::thread::spawn(move || {
            let mut answers = Vec::new();
            for s in strangers {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&s).unwrap();
                let mut buf = Vec::new();
                let _ = c.read_to_end(&mut buf);
                answers.push(buf.len());
            }
            // Silence: connect and say nothing (dropped after HELLO_TIMEOUT; nothing sent).
            let silent = TcpStream::connect(addr).unwrap();
            // The real ranks, then rank 1 again (after it was served, refused).
            let one = fetch(&addr.to_string(), 1, world, 0, Duration::from_secs(20)).unwrap();
            let two = fetch(&addr.to_string(), 2, world, 0, Duration::from_secs(20)).unwrap();
            drop(silent);
            (answers, one, two)
        });
        let mut log = Vec::new();
        serve(
            &listener,
            world,
            0,
            &id(),
            Duration::from_secs(30),
            &mut |m| log.push(m),
        )
        .unwrap();
        let (answers, one, two) = probes.join().unwrap();
        assert_eq!(answers, vec![0; n], "nothing is sent to a stranger");
        assert_eq!((one, two), (id(), id()));
        assert!(log.len() > n, "{log:?}");
        for want in [
            "wrong magic",
            "world of 4",
            "rank 0 is not",
            "rank 7 is not",
            "exchange 9",
            "hello",
        ] {
            assert!(log.iter().any(|l| l.contains(want)), "{want}: {log:?}");
        }
        // A rank served already is refused (the listener of the next exchange sees it).
        let listener = listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let twice = std::thread::spawn(move || {
            let first = fetch(&addr, 1, 3, 0, Duration::from_secs(20));
            let again = fetch(&addr, 1, 3, 0, Duration::from_secs(20));
            let two = fetch(&addr, 2, 3, 0, Duration::from_secs(20));
            (
                first.is_ok(),
                again.err().map(|e| e.to_string()),
                two.is_ok(),
            )
        });
        let mut log = Vec::new();
        serve(&listener, 3, 0, &id(), Duration::from_secs(30), &mut |m| {
            log.push(m)
        })
        .unwrap();
        let (first, again, two) = twice.join().unwrap();
        assert!(first && two);
        assert!(again.unwrap().contains("refused"));
        assert!(
            log.iter().any(|l| l.contains("has its id already")),
            "{log:?}"
        );
    }

    /// Rank 0 names the ranks that never came; a rank with nobody listening names the address.
    #[test]
    fn timeouts_name_the_missing_ranks() {
        let listener = listen("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let c = std::thread::spawn(move || fetch(&addr, 2, 4, 0, Duration::from_secs(20)));
        let e = serve(
            &listener,
            4,
            0,
            &id(),
            Duration::from_millis(600),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("rank(s) 1, 3 did not connect"),
            "{e}"
        );
        assert_eq!(c.join().unwrap().unwrap(), id());
        drop(listener);
        // A port held by another listener is named as such.
        let held = listen("127.0.0.1:0").unwrap();
        let e = listen(&held.local_addr().unwrap().to_string()).unwrap_err();
        assert!(e.to_string().contains("give a free one"), "{e}");
        // Nothing listens on a port just released.
        let free = listen("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let e = fetch(&free, 1, 2, 0, Duration::from_millis(400)).unwrap_err();
        assert!(
            e.to_string().contains("rank 1 of 2") && e.to_string().contains(&free),
            "{e}"
        );
    }

    /// The file form and `exchange`'s checks; rounds give each exchange its own file.
    #[test]
    fn the_file_form_and_rounds() {
        let dir = std::env::temp_dir().join(format!("matmul-rdv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let rdv = Rendezvous::File(dir.join("id")).for_round(2);
        assert_eq!(rdv, Rendezvous::File(dir.join("id.2")));
        let r0 = exchange(
            &rdv,
            0,
            2,
            2,
            Duration::from_secs(5),
            || Ok(id()),
            &mut |_| {},
        )
        .unwrap();
        let r1 = exchange(
            &rdv,
            1,
            2,
            2,
            Duration::from_secs(5),
            || unreachable!(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!((r0, r1), (id(), id()));
        let again = exchange(
            &rdv,
            0,
            2,
            2,
            Duration::from_secs(5),
            || Ok(id()),
            &mut |_| {},
        );
        assert!(again.unwrap_err().to_string().contains("exists already"));
        assert!(exchange(&rdv, 2, 2, 0, Duration::ZERO, || Ok(id()), &mut |_| {}).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn launchers_variables() {
        let torch = vars(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "node-0"),
            ("MASTER_PORT", "29500"),
        ]);
        let l = Launch::from_vars(&torch).unwrap().unwrap();
        assert_eq!(
            l,
            Launch {
                rank: 3,
                world: 8,
                local_rank: Some(1),
                master: Some("node-0:29500".into()),
                launcher: "torchrun"
            }
        );
        let slurm = vars(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_NTASKS", "6"),
            ("SLURM_LOCALID", "1"),
        ]);
        let l = Launch::from_vars(&slurm).unwrap().unwrap();
        assert_eq!(
            (l.rank, l.world, l.local_rank, l.launcher),
            (5, 6, Some(1), "slurm")
        );
        assert_eq!(l.master, None);
        let ompi = vars(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "fe80::1"),
            ("MASTER_PORT", "1234"),
        ]);
        let l = Launch::from_vars(&ompi).unwrap().unwrap();
        assert_eq!(
            (l.launcher, l.master.as_deref()),
            ("open-mpi", Some("[fe80::1]:1234"))
        );
        let mpich = vars(&[("PMI_RANK", "1"), ("PMI_SIZE", "2")]);
        assert_eq!(
            Launch::from_vars(&mpich).unwrap().unwrap().launcher,
            "mpich"
        );
        assert_eq!(Launch::from_vars(&vars(&[("RANK", "1")])).unwrap(), None);
        for (bad, name) in [
            (vars(&[("RANK", "x"), ("WORLD_SIZE", "2")]), "RANK"),
            (vars(&[("RANK", "2"), ("WORLD_SIZE", "2")]), "RANK=2"),
            (
                vars(&[
                    ("RANK", "0"),
                    ("WORLD_SIZE", "2"),
                    ("MASTER_ADDR", "h"),
                    ("MASTER_PORT", "70000"),
                ]),
                "MASTER_PORT",
            ),
        ] {
            let e = Launch::from_vars(&bad).unwrap_err();
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
