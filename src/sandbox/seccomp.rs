//! The helper's seccomp filter: a sandboxed command cannot create a Unix socket, nor any
//! socket but IP and netlink, nor a user namespace of its own.
//!
//! Landlock restricts `connect()` only for TCP; a Unix socket with a path on disk (the control
//! socket beside the store, a Docker or D-Bus socket) or an abstract name is reached by
//! `socket(AF_UNIX, …)` then `connect()`. So `socket` takes only `AF_INET`, `AF_INET6` and
//! `AF_NETLINK` (name lookups ask the kernel for addresses over it); every other family —
//! Unix, vsock (not scoped by the network namespace), packet, Bluetooth, crypto — fails with
//! `EACCES`, while `socketpair` (pipes between a command's own processes) still works for
//! streams: a datagram pair is refused, since a datagram socket can send to any address
//! (`sendto` a host socket's path) and be connected again, whatever it was made as. The
//! kernel's key management calls (`keyctl`, `add_key`, `request_key`) are refused too: a
//! command would inherit the service's session keyring, read its keys and leave its own
//! behind.
//! `io_uring` is refused: its `SOCKET` and `CONNECT` operations would go around this filter.
//! `unshare` and `clone` with `CLONE_NEWUSER` are refused (a nested user namespace opens kernel
//! surface such as nf_tables to the command), and `clone3`, whose flags sit in memory a filter
//! cannot read, answers `ENOSYS` so that libc falls back to `clone`. A syscall from another
//! architecture's table (32-bit `int 0x80`, x32) is refused whole, since the numbers checked
//! here are only this architecture's — notably `socketcall` would otherwise reach `socket`
//! unseen.

/// `AUDIT_ARCH_*` of the architectures this filter knows (from `<linux/audit.h>`).
#[cfg(target_arch = "x86_64")]
const THIS_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const THIS_ARCH: u32 = 0xC000_00B7;

/// On x86_64, syscalls with this bit set use the x32 table.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets into `struct seccomp_data`: `nr`, `arch`, then the low halves of `args[0]` and
/// `args[1]`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0_LOW: u32 = 16;
const ARG1_LOW: u32 = 24;

/// The bits of `socket`'s and `socketpair`'s type argument that name the type (the rest are
/// `SOCK_NONBLOCK` and `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u32 = 0xf;

fn statement(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// A conditional jump: `jt`/`jf` instructions forward when `A == k` holds / does not.
fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

fn syscall_number(nr: libc::c_long) -> u32 {
    nr as u32
}

/// The filter program. Jumps are written as targets (`to(from, target)` gives the offset).
fn program() -> Vec<libc::sock_filter> {
    use libc::{
        BPF_ABS, BPF_ALU, BPF_AND, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET,
        BPF_W,
    };
    const LOAD: u32 = BPF_LD | BPF_W | BPF_ABS;
    const EQ: u32 = BPF_JMP | BPF_JEQ | BPF_K;
    // The shared returns, at the end.
    const REFUSE: usize = 24;
    const ALLOW: usize = 25;
    const NO_SUCH_CALL: usize = 26;
    const SOCKET_DOMAIN: usize = 15;
    const SOCKETPAIR_TYPE: usize = 19;
    const NAMESPACE_FLAGS: usize = 22;
    let to = |from: usize, target: usize| u8::try_from(target - from - 1).unwrap_or(0);
    let nr = |n: libc::c_long| syscall_number(n);
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA);
    vec![
        /* 0 */ statement(LOAD, ARCH),
        /* 1 */ jump(EQ, THIS_ARCH, 0, to(1, REFUSE)),
        /* 2 */ statement(LOAD, NR),
        /* 3 */ jump(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, to(3, REFUSE), 0),
        /* 4 */ jump(EQ, nr(libc::SYS_io_uring_setup), to(4, REFUSE), 0),
        /* 5 */ jump(EQ, nr(libc::SYS_io_uring_enter), to(5, REFUSE), 0),
        /* 6 */ jump(EQ, nr(libc::SYS_io_uring_register), to(6, REFUSE), 0),
        /* 7 */ jump(EQ, nr(libc::SYS_keyctl), to(7, REFUSE), 0),
        /* 8 */ jump(EQ, nr(libc::SYS_add_key), to(8, REFUSE), 0),
        /* 9 */ jump(EQ, nr(libc::SYS_request_key), to(9, REFUSE), 0),
        /* 10 */ jump(EQ, nr(libc::SYS_clone3), to(10, NO_SUCH_CALL), 0),
        /* 11 */ jump(EQ, nr(libc::SYS_socket), to(11, SOCKET_DOMAIN), 0),
        /* 12 */ jump(EQ, nr(libc::SYS_socketpair), to(12, SOCKETPAIR_TYPE), 0),
        /* 13 */ jump(EQ, nr(libc::SYS_unshare), to(13, NAMESPACE_FLAGS), 0),
        /* 14 */
        jump(
            EQ,
            nr(libc::SYS_clone),
            to(14, NAMESPACE_FLAGS),
            to(14, ALLOW),
        ),
        /* 15: socket's domain */ statement(LOAD, ARG0_LOW),
        /* 16 */ jump(EQ, libc::AF_INET as u32, to(16, ALLOW), 0),
        /* 17 */ jump(EQ, libc::AF_INET6 as u32, to(17, ALLOW), 0),
        /* 18 */ jump(EQ, libc::AF_NETLINK as u32, to(18, ALLOW), to(18, REFUSE)),
        /* 19: socketpair's type */ statement(LOAD, ARG1_LOW),
        /* 20 */ statement(BPF_ALU | BPF_AND | BPF_K, SOCK_TYPE_MASK),
        /* 21 */
        jump(EQ, libc::SOCK_DGRAM as u32, to(21, REFUSE), to(21, ALLOW)),
        /* 22: unshare's and clone's flags */ statement(LOAD, ARG0_LOW),
        /* 23 */
        jump(
            BPF_JMP | BPF_JSET | BPF_K,
            libc::CLONE_NEWUSER as u32,
            to(23, REFUSE),
            to(23, ALLOW),
        ),
        /* 24 = REFUSE */ statement(BPF_RET | BPF_K, errno(libc::EACCES)),
        /* 25 = ALLOW */ statement(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        /* 26 = NO_SUCH_CALL */ statement(BPF_RET | BPF_K, errno(libc::ENOSYS)),
    ]
}

/// Installs the filter on this thread (and whatever it `exec`s). `no_new_privs` must be set
/// already (Landlock's `restrict_self` sets it).
pub fn refuse_unix_sockets() -> Result<(), std::io::Error> {
    let mut filter = program();
    let prog = libc::sock_fprog {
        len: u16::try_from(filter.len())
            .map_err(|_| std::io::Error::other("the filter is too long"))?,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, which outlives the call; the kernel copies it.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program over one syscall, as the kernel would (the few opcodes it uses).
    fn verdict(arch: u32, nr: u32, arg0: u32) -> u32 {
        verdict_of(arch, nr, arg0, 0)
    }

    fn verdict_of(arch: u32, nr: u32, arg0: u32, arg1: u32) -> u32 {
        let program = program();
        let mut pc = 0;
        let mut a = 0;
        loop {
            let i = program[pc];
            let code = u32::from(i.code);
            match code & 0x07 {
                c if c == libc::BPF_LD => {
                    a = match i.k {
                        ARCH => arch,
                        NR => nr,
                        ARG0_LOW => arg0,
                        ARG1_LOW => arg1,
                        other => panic!("load of offset {other}"),
                    };
                    pc += 1;
                }
                c if c == libc::BPF_ALU => {
                    assert_eq!(code & 0xf0, libc::BPF_AND, "alu op");
                    a &= i.k;
                    pc += 1;
                }
                c if c == libc::BPF_JMP => {
                    let taken = match code & 0xf0 {
                        op if op == libc::BPF_JEQ => a == i.k,
                        op if op == libc::BPF_JGE => a >= i.k,
                        op if op == libc::BPF_JSET => a & i.k != 0,
                        op => panic!("jump {op}"),
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                c if c == libc::BPF_RET => return i.k,
                other => panic!("opcode class {other}"),
            }
        }
    }

    #[test]
    fn refuses_what_it_says_and_nothing_else() {
        let refuse = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let no_such_call = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let nr = |n: libc::c_long| n as u32;
        let socket = nr(libc::SYS_socket);
        for family in [
            libc::AF_UNIX,
            libc::AF_VSOCK,
            libc::AF_PACKET,
            libc::AF_ALG,
            31,
        ] {
            assert_eq!(
                verdict(THIS_ARCH, socket, family as u32),
                refuse,
                "{family}"
            );
        }
        for family in [libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK] {
            assert_eq!(verdict(THIS_ARCH, socket, family as u32), allow, "{family}");
        }
        let socketpair = nr(libc::SYS_socketpair);
        let unix = libc::AF_UNIX as u32;
        for kind in [libc::SOCK_STREAM, libc::SOCK_SEQPACKET] {
            for flags in [0, libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK] {
                let kind = (kind | flags) as u32;
                assert_eq!(verdict_of(THIS_ARCH, socketpair, unix, kind), allow);
            }
        }
        for flags in [0, libc::SOCK_CLOEXEC, libc::SOCK_NONBLOCK] {
            let datagram = (libc::SOCK_DGRAM | flags) as u32;
            assert_eq!(verdict_of(THIS_ARCH, socketpair, unix, datagram), refuse);
        }
        for keys in [libc::SYS_keyctl, libc::SYS_add_key, libc::SYS_request_key] {
            assert_eq!(verdict(THIS_ARCH, nr(keys), 0), refuse);
        }
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_connect), 3), allow);
        for uring in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            assert_eq!(verdict(THIS_ARCH, nr(uring), 8), refuse);
        }
        let new_user = libc::CLONE_NEWUSER as u32;
        assert_eq!(
            verdict(THIS_ARCH, nr(libc::SYS_unshare), new_user | 0x20000),
            refuse
        );
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_unshare), 0x20000), allow);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_clone), new_user), refuse);
        // fork() is clone(SIGCHLD); threads are clone with CLONE_VM|CLONE_THREAD|….
        assert_eq!(
            verdict(THIS_ARCH, nr(libc::SYS_clone), libc::SIGCHLD as u32),
            allow
        );
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_clone), 0x003d_0f00), allow);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_clone3), 0), no_such_call);
        assert_eq!(
            verdict(THIS_ARCH, X32_SYSCALL_BIT | socket, libc::AF_INET as u32),
            refuse
        );
        // i386's socketcall (102), through `int 0x80` on x86_64.
        assert_eq!(verdict(0x4000_0003, 102, 1), refuse);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_read), 0), allow);
    }
}
