#!/usr/bin/env python3
"""Where a process's threads wait: off-CPU time summed by the stack each thread left the CPU with.

  offcpu_stacks.py record PID SECONDS DIR
      Two perf recordings at once, for SECONDS: the process's sched_switch events with
      their stacks (--call-graph dwarf: the Release build has no frame pointers) and the
      machine's sched_switch events without stacks, which say when each thread got a core
      back. Needs perf and root.
  offcpu_stacks.py report DIR [THREAD_NAME_OR_FRAME]
      Per thread (only those with a frame containing THREAD_NAME_OR_FRAME, default
      "Pipeline::"), the off-CPU seconds by state and leaving stack: state S/D is a wait
      (for records, a lock, a commit), state R is a thread that was preempted and stood
      runnable until a core was free (on 2 vCPUs, the machine's contention).

A sample per switch, not per millisecond: a thread that waits rarely but long shows as a
few events with many seconds. The profile that made this tool (c at 10M, 2026-12-05)
read: exactly's pipeline thread off-CPU 3.2 s of 5, of it 0.7 s waiting for records in
the source's poll and most of the rest runnable, preempted (docs/benchmarks.md,
"Prefetches the compiler had dropped").
"""
import bisect
import collections
import os
import re
import subprocess
import sys

KERNEL = re.compile(r'(__)?(schedule|x64_sys|do_syscall|entry_SYSCALL|futex|do_futex|exit_to_user|'
                    r'irqentry|asm_|do_nanosleep|hrtimer|common_nsleep|schedule_hrtimeout|do_sys_poll|'
                    r'do_epoll|ep_poll|__se_sys|do_select|core_sys)')


def record(pid, seconds, out):
    os.makedirs(out, exist_ok=True)
    machine = subprocess.Popen(['perf', 'record', '-a', '-e', 'sched:sched_switch', '-o',
                                os.path.join(out, 'machine.data'), '--', 'sleep', seconds],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(['perf', 'record', '-e', 'sched:sched_switch', '--call-graph', 'dwarf,8192', '-p',
                    pid, '-o', os.path.join(out, 'process.data'), '--', 'sleep', seconds],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    machine.wait()


def script(path, fields):
    return subprocess.run(['perf', 'script', '-i', path, '-F', fields], capture_output=True,
                          text=True, check=True).stdout.splitlines()


def report(out, want):
    back = collections.defaultdict(list)  # tid -> times it got a core
    for line in script(os.path.join(out, 'machine.data'), 'time,trace'):
        m = re.match(r'\s*([\d.]+):\s+.*next_pid=(\d+)', line)
        if m:
            back[int(m.group(2))].append(float(m.group(1)))
    for times in back.values():
        times.sort()
    events, cur = [], None
    for line in script(os.path.join(out, 'process.data'), 'tid,time,trace,ip,sym'):
        m = re.match(r'\s*(\d+)\s+([\d.]+):\s+(.*)', line)
        if m:
            state = re.search(r'prev_state=(\S+)', m.group(3))
            cur = [int(m.group(1)), float(m.group(2)), state.group(1)[:1] if state else '?', []]
            events.append(cur)
        elif cur is not None and line.strip():
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                cur[3].append(re.sub(r'\+0x[0-9a-f]+$', '', parts[1]))
    total, count, per_thread = collections.Counter(), collections.Counter(), collections.Counter()
    for tid, left, state, stack in events:
        times = back.get(tid, [])
        i = bisect.bisect_right(times, left)
        if i == len(times):
            continue  # still off the CPU when the recording ended
        frames = [f for f in stack if not KERNEL.match(f)]
        key = (tid, state, ' < '.join(frames[:7]))
        total[key] += times[i] - left
        count[key] += 1
        per_thread[tid] += times[i] - left
    for tid, seconds in per_thread.most_common():
        rows = sorted(((v, k) for k, v in total.items() if k[0] == tid), reverse=True)
        if not any(want in k[2] for _, k in rows):
            continue
        states = collections.Counter()
        for v, k in rows:
            states[k[1]] += v
        by_state = ', '.join(f'{st} {v:.2f} s' for st, v in states.most_common())
        print(f'== thread {tid}: off the CPU {seconds:.2f} s ({by_state})')
        for v, k in rows[:14]:
            print(f'  {v:7.3f} s {count[k]:6d}x state {k[1]}: {k[2][:300]}')


def main():
    if len(sys.argv) == 5 and sys.argv[1] == 'record':
        record(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == 'report':
        report(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else 'Pipeline::')
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main()
