//! What `fragstate bench swarm` reads about its own process from /proc
//! (Linux; each reads 0 elsewhere): CPU time, page faults, resident memory and
//! the open-files limit of the one process that runs every node.

/// The fields of one read of /proc/self/stat from field 3 on, each in its
/// place (0 for one that is no u64, such as the state letter or a negative
/// `tpgid`: dropping those, as this did until 2026-12-08, shifted every later
/// field by one without a controlling terminal, so "CPU" read stime + cutime).
struct ProcStat(Vec<u64>);

impl ProcStat {
    fn read() -> Self {
        Self::parse(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
    }

    fn parse(stat: &str) -> Self {
        // The command name may hold spaces and parentheses: fields start after the last ')', at field 3.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        Self(rest.split_whitespace().map(|x| x.parse().unwrap_or(0)).collect())
    }

    /// Field `n`, 1-based as proc(5) counts (0 when absent or below 3).
    fn field(&self, n: usize) -> u64 {
        n.checked_sub(3).and_then(|i| self.0.get(i)).copied().unwrap_or(0)
    }
}

/// User plus system CPU seconds of this process (utime and stime, fields 14 and 15).
pub(super) fn cpu_seconds() -> f64 {
    let stat = ProcStat::read();
    (stat.field(14) + stat.field(15)) as f64 / USER_HZ
}

/// CPU seconds of this process's live threads, to the nanosecond (the first
/// field of each /proc/self/task/*/schedstat; 0 elsewhere): short windows,
/// which /proc/self/stat's 10 ms units cannot resolve.
pub(super) fn thread_cpu_seconds() -> f64 {
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten();
    let ns: u64 = tasks.filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok()?.split_whitespace().next()?.parse::<u64>().ok()).sum();
    ns as f64 / 1e9
}

/// Page faults of this process so far: minor and major (minflt and majflt, fields 10 and 12).
pub(super) fn page_faults() -> (u64, u64) {
    let stat = ProcStat::read();
    (stat.field(10), stat.field(12))
}

/// Clock ticks per second of /proc's CPU times: 100 on every Linux architecture this builds for.
const USER_HZ: f64 = 100.0;

/// The soft limit on open files of this process (/proc/self/limits; 0 when unknown).
pub(super) fn open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits.lines().find_map(|l| l.strip_prefix("Max open files")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// Resident bytes of this process (/proc/self/status VmRSS; 0 elsewhere).
pub(super) fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok()).map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::ProcStat;

    #[test]
    fn fields_keep_their_places_past_a_negative_tpgid_and_a_command_with_spaces() {
        // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
        let stat = ProcStat::parse("42 (a (b) c) S 1 42 42 0 -1 4194304 125 7 3 0 250 31 0 0");
        assert_eq!((stat.field(8), stat.field(10), stat.field(11), stat.field(12)), (0, 125, 7, 3));
        assert_eq!((stat.field(14), stat.field(15)), (250, 31));
        assert_eq!((stat.field(2), stat.field(99)), (0, 0));
    }
}
