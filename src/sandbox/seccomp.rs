//! The helper's seccomp filter: a sandboxed command cannot create a Unix socket.
//!
//! Landlock restricts `connect()` only for TCP; a Unix socket with a path on disk (the control
//! socket beside the store, a Docker or D-Bus socket) or an abstract name is reached by
//! `socket(AF_UNIX, …)` then `connect()`. So `socket` with `AF_UNIX` fails with `EACCES`, while
//! `socketpair` (pipes between a command's own processes) still works. `io_uring` is refused
//! too: its `SOCKET` and `CONNECT` operations would go around this filter. A syscall from
//! another architecture's table (32-bit `int 0x80`, x32) is refused whole, since the numbers
//! checked here are only this architecture's — notably `socketcall` would otherwise reach
//! `socket` unseen.

/// `AUDIT_ARCH_*` of the architectures this filter knows (from `<linux/audit.h>`).
#[cfg(target_arch = "x86_64")]
const THIS_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const THIS_ARCH: u32 = 0xC000_00B7;

/// On x86_64, syscalls with this bit set use the x32 table.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets into `struct seccomp_data`: `nr`, `arch`, then the low half of `args[0]`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0_LOW: u32 = 16;

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

/// The filter program.
fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let refuse = libc::SECCOMP_RET_ERRNO | (libc::EACCES as u32 & libc::SECCOMP_RET_DATA);
    let allow = libc::SECCOMP_RET_ALLOW;
    vec![
        // 0: another architecture's syscall table → refuse.
        statement(BPF_LD | BPF_W | BPF_ABS, ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        statement(BPF_RET | BPF_K, refuse),
        // 3: the syscall number; x32 numbers → refuse.
        statement(BPF_LD | BPF_W | BPF_ABS, NR),
        jump(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 4, 0),
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            syscall_number(libc::SYS_io_uring_setup),
            3,
            0,
        ),
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            syscall_number(libc::SYS_io_uring_enter),
            2,
            0,
        ),
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            syscall_number(libc::SYS_io_uring_register),
            1,
            0,
        ),
        // 8: socket(domain, …): AF_UNIX → refuse; anything else → allow.
        jump(
            BPF_JMP | BPF_JEQ | BPF_K,
            syscall_number(libc::SYS_socket),
            2,
            1,
        ),
        // 9: refuse.
        statement(BPF_RET | BPF_K, refuse),
        // 10: allow.
        statement(BPF_RET | BPF_K, allow),
        // 11: socket: the domain is args[0].
        statement(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::AF_UNIX as u32, 0, 1),
        statement(BPF_RET | BPF_K, refuse),
        statement(BPF_RET | BPF_K, allow),
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
                        other => panic!("load of offset {other}"),
                    };
                    pc += 1;
                }
                c if c == libc::BPF_JMP => {
                    let taken = if code & 0xf0 == libc::BPF_JEQ {
                        a == i.k
                    } else {
                        a >= i.k
                    };
                    pc += 1 + usize::from(if taken { i.jt } else { i.jf });
                }
                c if c == libc::BPF_RET => return i.k,
                other => panic!("opcode class {other}"),
            }
        }
    }

    #[test]
    fn refuses_unix_sockets_and_foreign_tables_only() {
        let refuse = libc::SECCOMP_RET_ERRNO | libc::EACCES as u32;
        let allow = libc::SECCOMP_RET_ALLOW;
        let nr = |n: libc::c_long| n as u32;
        let socket = nr(libc::SYS_socket);
        assert_eq!(verdict(THIS_ARCH, socket, libc::AF_UNIX as u32), refuse);
        assert_eq!(verdict(THIS_ARCH, socket, libc::AF_INET as u32), allow);
        assert_eq!(verdict(THIS_ARCH, socket, libc::AF_INET6 as u32), allow);
        assert_eq!(
            verdict(THIS_ARCH, nr(libc::SYS_socketpair), libc::AF_UNIX as u32),
            allow
        );
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_connect), 3), allow);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_io_uring_setup), 8), refuse);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_io_uring_enter), 8), refuse);
        assert_eq!(
            verdict(THIS_ARCH, nr(libc::SYS_io_uring_register), 8),
            refuse
        );
        assert_eq!(verdict(THIS_ARCH, X32_SYSCALL_BIT | socket, 1), refuse);
        // i386's socketcall (102), through `int 0x80` on x86_64.
        assert_eq!(verdict(0x4000_0003, 102, 1), refuse);
        assert_eq!(verdict(THIS_ARCH, nr(libc::SYS_read), 0), allow);
    }
}
