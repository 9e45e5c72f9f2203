//! One GEMM over several GPUs, through NCCL (cargo feature `nccl`): the library opened by its
//! soname ([`comm`]), the layouts that split the product ([`multi`]), and how the processes of a
//! run meet ([`rendezvous`]: a shared file or TCP, rank and world from a launcher's variables). Above the CUDA
//! backend and dispatch: each rank runs a CUDA kernel that dispatch chooses.

pub mod comm;
pub mod layout;
pub mod multi;
pub mod rendezvous;

pub use comm::*;
