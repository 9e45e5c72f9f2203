//! NCCL, opened at run time by this crate rather than by cudarc.
//!
//! cudarc 0.19's loader tries `libnccl.so`, `libnccl.so.<CUDA major>`, `.12`, ... `.1` but never
//! `libnccl.so.2`, NCCL's real soname (and the only name a runtime-only install has), and panics
//! when it finds none. So the NCCL entry points used here are resolved from a library this module
//! opens itself ([`library`]); cudarc's `nccl-02028` bindings (NCCL 2.28, the GPU hosts') give the
//! types (`ncclUniqueId`, `ncclComm_t`, the data-type and reduction enums). Results come back as
//! plain ints, never as a Rust enum, so a code newer than the bindings is a value, not UB.
//!
//! [`Comm`] is one rank's communicator, made on that rank's own thread ([`Comm::from_rank`] with
//! one shared [`UniqueId`]); it is not `Send`. [`Comm::finish`] destroys it cleanly; dropping it
//! unfinished (an error path) aborts it, which also ends any NCCL kernel still waiting for a peer.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use cudarc::driver::sys::CUstream;
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclUniqueId};

use crate::error::{Error, Result};

type Res = c_int;

/// The NCCL entry points this crate calls.
struct Api {
    get_version: unsafe extern "C" fn(*mut c_int) -> Res,
    get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> Res,
    comm_init_rank: unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> Res,
    comm_destroy: unsafe extern "C" fn(ncclComm_t) -> Res,
    comm_abort: unsafe extern "C" fn(ncclComm_t) -> Res,
    comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut Res) -> Res,
    get_error_string: unsafe extern "C" fn(Res) -> *const c_char,
    get_last_error: unsafe extern "C" fn(ncclComm_t) -> *const c_char,
    group_start: unsafe extern "C" fn() -> Res,
    group_end: unsafe extern "C" fn() -> Res,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, ncclComm_t, CUstream) -> Res,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, ncclComm_t, CUstream) -> Res,
    #[allow(clippy::type_complexity)]
    reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Res,
    #[allow(clippy::type_complexity)]
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        c_int,
        c_int,
        ncclComm_t,
        CUstream,
    ) -> Res,
}

/// An opened NCCL: the library (kept open for the process), where it was found, its entry points.
pub struct Nccl {
    _lib: libloading::Library,
    /// The name or path it was opened by.
    pub found: String,
    api: Api,
}

/// The names and paths tried, in order: [`Config::nccl_lib`](crate::Config::nccl_lib) (a file), the soname and the
/// development name on the loader's path (LD_LIBRARY_PATH, ld.so.cache, /usr/lib), then the usual
/// install directories (Debian packages, the CUDA toolkit).
pub fn candidates() -> Vec<String> {
    let mut names = Vec::new();
    if let Some(path) = &crate::config::get().nccl_lib {
        if !path.as_os_str().is_empty() {
            names.push(path.to_string_lossy().into_owned());
        }
    }
    names.extend(
        [
            "libnccl.so.2",
            "libnccl.so",
            "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
            "/usr/lib/aarch64-linux-gnu/libnccl.so.2",
            "/usr/local/cuda/lib64/libnccl.so.2",
            "/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2",
            "/usr/local/cuda/targets/sbsa-linux/lib/libnccl.so.2",
        ]
        .map(String::from),
    );
    names
}

/// NCCL, opened once per process; a missing library or entry point is an error naming what was
/// tried, never a panic.
pub fn library() -> Result<&'static Nccl> {
    static CELL: OnceLock<std::result::Result<Nccl, String>> = OnceLock::new();
    CELL.get_or_init(open)
        .as_ref()
        .map_err(|message| Error::Cuda {
            context: "loading NCCL".into(),
            message: message.clone(),
        })
}

fn open() -> std::result::Result<Nccl, String> {
    let tried = candidates();
    let mut last = String::new();
    for name in &tried {
        // SAFETY: NCCL's initializers only register its internal state.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => {
                let api = resolve(&lib).map_err(|e| format!("{name}: {e}"))?;
                return Ok(Nccl {
                    _lib: lib,
                    found: name.clone(),
                    api,
                });
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "libnccl.so.2 was not found (tried {}; last error: {last}): install NCCL (the libnccl2 \
         package or the PyPI wheel nvidia-nccl-cu13) and put its directory on LD_LIBRARY_PATH, \
         or set MATMUL_NCCL_LIB to the file",
        tried.join(", ")
    ))
}

fn resolve(lib: &libloading::Library) -> std::result::Result<Api, libloading::Error> {
    // SAFETY: each symbol is NCCL's C function of that name, with the signature of nccl.h (2.x).
    unsafe {
        Ok(Api {
            get_version: *lib.get(b"ncclGetVersion\0")?,
            get_unique_id: *lib.get(b"ncclGetUniqueId\0")?,
            comm_init_rank: *lib.get(b"ncclCommInitRank\0")?,
            comm_destroy: *lib.get(b"ncclCommDestroy\0")?,
            comm_abort: *lib.get(b"ncclCommAbort\0")?,
            comm_get_async_error: *lib.get(b"ncclCommGetAsyncError\0")?,
            get_error_string: *lib.get(b"ncclGetErrorString\0")?,
            get_last_error: *lib.get(b"ncclGetLastError\0")?,
            group_start: *lib.get(b"ncclGroupStart\0")?,
            group_end: *lib.get(b"ncclGroupEnd\0")?,
            send: *lib.get(b"ncclSend\0")?,
            recv: *lib.get(b"ncclRecv\0")?,
            reduce: *lib.get(b"ncclReduce\0")?,
            all_reduce: *lib.get(b"ncclAllReduce\0")?,
        })
    }
}

impl std::fmt::Debug for Nccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nccl").field("found", &self.found).finish()
    }
}

impl Nccl {
    /// The library's version as (major, minor, patch), e.g. (2, 28, 3).
    pub fn version(&self) -> Result<(u32, u32, u32)> {
        let mut v: c_int = 0;
        // SAFETY: writes one int.
        self.check(unsafe { (self.api.get_version)(&mut v) }, None, || {
            "ncclGetVersion".into()
        })?;
        // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
        let v = v.max(0) as u32;
        Ok((v / 10000, v / 100 % 100, v % 100))
    }

    /// A fresh unique id: made once, handed to every rank.
    pub fn unique_id(&self) -> Result<UniqueId> {
        let mut id = ncclUniqueId { internal: [0; 128] };
        // SAFETY: writes one ncclUniqueId.
        self.check(unsafe { (self.api.get_unique_id)(&mut id) }, None, || {
            "ncclGetUniqueId".into()
        })?;
        Ok(UniqueId(id))
    }

    fn error_string(&self, code: Res) -> String {
        // SAFETY: NCCL returns a static C string for any code.
        let s = unsafe { (self.api.get_error_string)(code) };
        if s.is_null() {
            format!("NCCL error {code}")
        } else {
            // SAFETY: non-null, NUL-terminated, static.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    }

    fn check(
        &self,
        code: Res,
        comm: Option<ncclComm_t>,
        what: impl FnOnce() -> String,
    ) -> Result<()> {
        if code == 0 {
            return Ok(());
        }
        let mut message = format!("{} (code {code})", self.error_string(code));
        if let Some(comm) = comm {
            // SAFETY: a live communicator; the string is NCCL's, NUL-terminated.
            let last = unsafe { (self.api.get_last_error)(comm) };
            if !last.is_null() {
                let last = unsafe { CStr::from_ptr(last) }.to_string_lossy();
                if !last.is_empty() {
                    message = format!("{message}: {last}");
                }
            }
        }
        Err(Error::Cuda {
            context: what(),
            message,
        })
    }
}

/// One NCCL unique id (128 bytes), copied to every rank of one communicator.
#[derive(Clone, Copy)]
pub struct UniqueId(pub ncclUniqueId);

/// NCCL's element types for what this crate moves and sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclType {
    /// Bytes: anything that is only moved.
    U8,
    /// u32: sums wrap modulo 2^32 (C unsigned arithmetic).
    U32,
    /// f32.
    F32,
    /// f16.
    F16,
    /// bf16.
    Bf16,
}

impl NcclType {
    fn raw(self) -> c_int {
        (match self {
            NcclType::U8 => ncclDataType_t::ncclUint8,
            NcclType::U32 => ncclDataType_t::ncclUint32,
            NcclType::F32 => ncclDataType_t::ncclFloat32,
            NcclType::F16 => ncclDataType_t::ncclFloat16,
            NcclType::Bf16 => ncclDataType_t::ncclBfloat16,
        }) as c_int
    }
}

const SUM: c_int = ncclRedOp_t::ncclSum as c_int;

/// One rank's communicator. Not `Send`: made, used and finished on its rank's thread.
pub struct Comm {
    raw: ncclComm_t,
    nccl: &'static Nccl,
    rank: usize,
    world: usize,
}

impl Comm {
    /// Joins communicator `id` as `rank` of `world` on the device whose context is current on
    /// this thread (bind it first). Blocks until every rank has joined.
    pub fn from_rank(id: &UniqueId, rank: usize, world: usize) -> Result<Comm> {
        let nccl = library()?;
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: writes one communicator handle; `id` is a valid unique id.
        let code =
            unsafe { (nccl.api.comm_init_rank)(&mut raw, world as c_int, id.0, rank as c_int) };
        nccl.check(code, None, || {
            format!("ncclCommInitRank (rank {rank} of {world})")
        })?;
        Ok(Comm {
            raw,
            nccl,
            rank,
            world,
        })
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world(&self) -> usize {
        self.world
    }

    fn check(&self, code: Res, what: impl FnOnce() -> String) -> Result<()> {
        self.nccl.check(code, Some(self.raw), || {
            format!("{} (rank {} of {})", what(), self.rank, self.world)
        })
    }

    /// An error NCCL met in the background (a peer gone, a network failure), if any.
    pub fn async_error(&self) -> Result<()> {
        let mut state: Res = 0;
        // SAFETY: a live communicator; writes one int.
        let code = unsafe { (self.nccl.api.comm_get_async_error)(self.raw, &mut state) };
        self.check(code, || "ncclCommGetAsyncError".into())?;
        // 7 = ncclInProgress: a non-blocking operation still running, not an error.
        if state == 0 || state == 7 {
            Ok(())
        } else {
            self.check(state, || "an asynchronous NCCL error".into())
        }
    }

    /// Starts a group: the sends and receives until [`Comm::group_end`] go out together.
    pub fn group_start(&self) -> Result<()> {
        // SAFETY: no arguments.
        self.check(unsafe { (self.nccl.api.group_start)() }, || {
            "ncclGroupStart".into()
        })
    }

    /// Ends a group.
    pub fn group_end(&self) -> Result<()> {
        // SAFETY: no arguments.
        self.check(unsafe { (self.nccl.api.group_end)() }, || {
            "ncclGroupEnd".into()
        })
    }

    /// Enqueues sending `count` elements at `buf` to `peer` on `stream`.
    ///
    /// # Safety
    /// `buf` must be a device allocation of this rank's device holding `count` elements of `ty`,
    /// left unchanged until the send has run on `stream`.
    pub unsafe fn send(
        &self,
        buf: u64,
        count: usize,
        ty: NcclType,
        peer: usize,
        stream: CUstream,
    ) -> Result<()> {
        let code = unsafe {
            (self.nccl.api.send)(
                buf as *const c_void,
                count,
                ty.raw(),
                peer as c_int,
                self.raw,
                stream,
            )
        };
        self.check(code, || {
            format!("ncclSend of {count} elements to rank {peer}")
        })
    }

    /// Enqueues receiving `count` elements from `peer` into `buf` on `stream`.
    ///
    /// # Safety
    /// `buf` must be a device allocation of this rank's device with room for `count` elements of
    /// `ty`, not read or written by anything else until the receive has run.
    pub unsafe fn recv(
        &self,
        buf: u64,
        count: usize,
        ty: NcclType,
        peer: usize,
        stream: CUstream,
    ) -> Result<()> {
        let code = unsafe {
            (self.nccl.api.recv)(
                buf as *mut c_void,
                count,
                ty.raw(),
                peer as c_int,
                self.raw,
                stream,
            )
        };
        self.check(code, || {
            format!("ncclRecv of {count} elements from rank {peer}")
        })
    }

    /// Enqueues the sum over all ranks of `count` elements at `send` into `recv` of rank `root`
    /// (`recv` is not touched elsewhere).
    ///
    /// # Safety
    /// As for [`Comm::send`] and, on the root, [`Comm::recv`].
    pub unsafe fn reduce(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        ty: NcclType,
        root: usize,
        stream: CUstream,
    ) -> Result<()> {
        let code = unsafe {
            (self.nccl.api.reduce)(
                send as *const c_void,
                recv as *mut c_void,
                count,
                ty.raw(),
                SUM,
                root as c_int,
                self.raw,
                stream,
            )
        };
        self.check(code, || {
            format!("ncclReduce of {count} elements to rank {root}")
        })
    }

    /// Enqueues the sum over all ranks of `count` elements at `send` into `recv` on every rank.
    ///
    /// # Safety
    /// As for [`Comm::send`] and [`Comm::recv`].
    pub unsafe fn all_reduce(
        &self,
        send: u64,
        recv: u64,
        count: usize,
        ty: NcclType,
        stream: CUstream,
    ) -> Result<()> {
        let code = unsafe {
            (self.nccl.api.all_reduce)(
                send as *const c_void,
                recv as *mut c_void,
                count,
                ty.raw(),
                SUM,
                self.raw,
                stream,
            )
        };
        self.check(code, || format!("ncclAllReduce of {count} elements"))
    }

    /// Destroys the communicator after its enqueued work (the clean end of a run).
    pub fn finish(self) -> Result<()> {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: a live communicator, never used again.
        let code = unsafe { (me.nccl.api.comm_destroy)(me.raw) };
        me.nccl.check(code, None, || {
            format!("ncclCommDestroy (rank {} of {})", me.rank, me.world)
        })
    }
}

impl Drop for Comm {
    /// An unfinished communicator is aborted: its pending operations end, peers see an error.
    fn drop(&mut self) {
        // SAFETY: a live communicator, never used again.
        unsafe { (self.nccl.api.comm_abort)(self.raw) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where NCCL is found (MATMUL_NCCL_LIB, or libnccl.so.2 on the loader path), every entry
    /// point resolves and it reports a 2.x version and a unique id; elsewhere the error names
    /// the soname and what was tried.
    #[test]
    fn opens_by_soname_or_refuses_clearly() {
        match library() {
            Ok(nccl) => {
                let (major, minor, _) = nccl.version().unwrap();
                println!("NCCL {major}.{minor} from {}", nccl.found);
                assert_eq!(major, 2);
                let id = nccl.unique_id().unwrap();
                assert!(id.0.internal.iter().any(|&b| b != 0));
            }
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains("libnccl.so.2") && e.contains("MATMUL_NCCL_LIB"),
                    "{e}"
                );
            }
        }
    }
}
