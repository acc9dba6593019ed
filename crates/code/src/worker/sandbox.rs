//! What a code worker process does to itself once its engine is warm, before it takes any call:
//! resource limits, then a seccomp filter that leaves it only computing, allocating memory
//! (never executable), sleeping for timers, and reading and writing its channel. No file can be
//! opened, no socket made, no program run, no signal sent: a flaw in the JavaScript engine
//! reaches only the call's own inputs.

/// Caps the process: no core dump (it would hold the call's data), no new file descriptors
/// beyond the three it has, and an address space of the engine's memory plus room for the
/// binary, the stack and the channel's frames.
pub fn limit_resources(memory: usize) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::resource::{Resource, setrlimit};
        let set = |what: Resource, value: u64, name: &str| {
            setrlimit(what, value, value).map_err(|e| format!("cannot limit {name}: {e}"))
        };
        set(Resource::RLIMIT_CORE, 0, "core dumps")?;
        set(Resource::RLIMIT_NOFILE, 3, "open files")?;
        let room = (memory as u64).saturating_add(1 << 30);
        set(Resource::RLIMIT_AS, room, "the address space")?;
        Ok(())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = memory;
        Err("resource limits are only set on Linux".into())
    }
}

/// Installs the seccomp filter on this (the only) thread; it holds for the process's life.
pub fn install_filter() -> Result<(), String> {
    #[cfg(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))]
    {
        let program =
            linux::program().map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
        seccompiler::apply_filter(&program)
            .map_err(|e| format!("cannot install the seccomp filter: {e}"))
    }
    #[cfg(not(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    )))]
    {
        Err("seccomp is only available on Linux (x86_64, aarch64)".into())
    }
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod linux {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };

    type Rules = BTreeMap<i64, Vec<SeccompRule>>;

    fn on_fd(fds: &[u64]) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        fds.iter()
            .map(|fd| {
                SeccompRule::new(vec![SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Eq,
                    *fd,
                )?])
            })
            .collect()
    }

    /// `prot` (argument `index`) without `PROT_EXEC`: memory is never made executable.
    fn not_executable(index: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let exec = libc::PROT_EXEC as u64;
        Ok(vec![SeccompRule::new(vec![SeccompCondition::new(
            index,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(exec),
            0,
        )?])?])
    }

    /// `mmap`: not executable, and anonymous. A file descriptor the worker inherited without
    /// close-on-exec (from whatever started the server) cannot be mapped and read.
    fn anonymous_not_executable() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let exec = libc::PROT_EXEC as u64;
        let anonymous = libc::MAP_ANONYMOUS as u64;
        Ok(vec![SeccompRule::new(vec![
            SeccompCondition::new(2, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(exec), 0)?,
            SeccompCondition::new(
                3,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(anonymous),
                anonymous,
            )?,
        ])?])
    }

    pub fn program() -> Result<BpfProgram, seccompiler::Error> {
        let mut rules: Rules = BTreeMap::new();
        // The channel: stdin in, stdout out; stderr for a panic's message.
        rules.insert(libc::SYS_read, on_fd(&[0])?);
        rules.insert(libc::SYS_write, on_fd(&[1, 2])?);
        rules.insert(libc::SYS_writev, on_fd(&[2])?);
        // Memory, never executable, never a file's.
        rules.insert(libc::SYS_mmap, anonymous_not_executable()?);
        rules.insert(libc::SYS_mprotect, not_executable(2)?);
        for call in [
            libc::SYS_munmap,
            libc::SYS_mremap,
            libc::SYS_brk,
            libc::SYS_madvise,
            // Time, timers, randomness (crypto.randomUUID).
            libc::SYS_clock_gettime,
            libc::SYS_clock_getres,
            libc::SYS_gettimeofday,
            libc::SYS_clock_nanosleep,
            libc::SYS_nanosleep,
            libc::SYS_getrandom,
            libc::SYS_futex,
            libc::SYS_sched_yield,
            // Ending, and what the C library does on the way.
            libc::SYS_exit,
            libc::SYS_exit_group,
            libc::SYS_rt_sigreturn,
            libc::SYS_rt_sigprocmask,
            libc::SYS_sigaltstack,
            libc::SYS_restart_syscall,
            libc::SYS_close,
            libc::SYS_getpid,
            libc::SYS_gettid,
        ] {
            rules.insert(call, vec![]);
        }
        let arch = std::env::consts::ARCH
            .try_into()
            .map_err(seccompiler::Error::Backend)?;
        // Anything else fails with EPERM: the worker's own code handles it as an I/O error.
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Errno(libc::EPERM as u32),
            SeccompAction::Allow,
            arch,
        )?;
        filter.try_into().map_err(seccompiler::Error::Backend)
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    use std::os::fd::AsRawFd;

    /// Under the filter (installed on one thread: seccomp filters are per thread), a file that
    /// is open cannot be read through `mmap`, nor can memory be made executable; anonymous
    /// memory still can be had.
    #[test]
    fn only_anonymous_memory_that_never_executes_can_be_mapped() {
        let file = std::fs::File::open("/proc/self/exe").unwrap_or_else(|e| panic!("{e}"));
        let fd = file.as_raw_fd();
        let outcome = std::thread::spawn(move || {
            super::install_filter().unwrap_or_else(|e| panic!("{e}"));
            let map = |prot: i32, flags: i32, fd: i32| {
                // SAFETY: a fresh mapping the test never dereferences; unmapped at once.
                #[allow(unsafe_code)]
                unsafe {
                    let at = libc::mmap(std::ptr::null_mut(), 4096, prot, flags, fd, 0);
                    if at == libc::MAP_FAILED {
                        return Err(std::io::Error::last_os_error().raw_os_error());
                    }
                    libc::munmap(at, 4096);
                    Ok(())
                }
            };
            (
                map(libc::PROT_READ, libc::MAP_PRIVATE, fd),
                map(
                    libc::PROT_READ | libc::PROT_EXEC,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                ),
                map(
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                ),
            )
        })
        .join()
        .unwrap_or_else(|_| panic!("the filtered thread panicked"));
        drop(file);
        assert_eq!(outcome.0, Err(Some(libc::EPERM)), "a file's pages");
        assert_eq!(outcome.1, Err(Some(libc::EPERM)), "executable memory");
        assert_eq!(outcome.2, Ok(()), "anonymous memory");
    }
}
