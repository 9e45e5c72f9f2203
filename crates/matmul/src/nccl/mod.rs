//! One GEMM over several GPUs of one host, through NCCL (cargo feature `nccl`): the library opened
//! by its soname ([`comm`]) and the layouts that split the product ([`multi`]). Above the CUDA
//! backend and dispatch: each rank runs a CUDA kernel that dispatch chooses.

pub mod comm;
pub mod multi;

pub use comm::*;
