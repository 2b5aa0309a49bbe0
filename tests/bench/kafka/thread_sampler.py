#!/usr/bin/env python3
"""Who had the cores in a late second: per-thread CPU of a latency case, every 100 ms.

  thread_sampler.py record FILE SECONDS
      Every 100 ms, for SECONDS: each thread's run and run-queue wait time
      (/proc/PID/task/TID/schedstat, threads of one name summed) of exactly, the broker,
      bench_paced_produce and bench_latency_reader; the machine's /proc/stat CPU line;
      reclaim and compaction counters from /proc/vmstat; and the CPU time of every
      other process (kernel threads included); and the sampler's own speed probe: the
      CPU time (its thread's, so a wait for a core does not count) of a fixed SHA-256
      of 256 KiB and of a fixed 8 MiB copy. Work that takes more CPU time in one second
      than in another means the vCPU itself ran slower then (the host's other guests),
      which steal time does not show. Start it beside
      `tests/bench/kafka/run_bench.sh --latency ...`.
  thread_sampler.py report FILE SECOND0_MS FROM TO [STEP]
      One line per STEP seconds (default 1) of input from FROM to TO, where second 0 is
      the reader's "second 0 = ... ms since the epoch": machine user/sys/idle (% of one
      core), the run % of the threads that made late seconds before (exactly's pipeline
      thread, the broker's request handlers, log cleaner, scheduler, GC and JIT threads),
      direct reclaim and compaction stalls, and the three busiest other processes.
  thread_sampler.py processes FILE SECOND0_MS FROM TO
      One line per second: machine user/sys/idle, the speed probe's CPU time (SHA-256,
      copy; in microseconds, the median of the second's probes), and each process's
      run/wait % of one core (all its threads): whose CPU grew when the machine filled up.
  thread_sampler.py threads FILE SECOND0_MS FROM TO [KIND]
      One line per second: the busiest threads of one process (KIND: exactly, broker,
      producer or reader; default exactly), each as run/wait % of one core.
"""
import hashlib
import os
import re
import statistics
import sys
import time

PROCS = {'exactly': re.compile(r'exactly\S* run'), 'broker': re.compile(r'kafka\.Kafka'),
         'producer': re.compile(r'bench_paced_produce'), 'reader': re.compile(r'bench_latency_reader')}
VMSTAT = ('pgscan_direct', 'compact_stall', 'allocstall_normal', 'allocstall_movable')
COLUMNS = [('exactly', 'exactly'), ('broker', 'data-plane-kafk'), ('broker', 'kafka-log-clean'),
           ('broker', 'kafka-scheduler'), ('broker', 'GC Thread#N'), ('broker', 'CN CompilerThre')]


def find_procs():
    found = {}
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            cmd = open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\0', b' ').decode()
        except OSError:
            continue
        if cmd.startswith(('python', 'bash', 'timeout')):
            continue
        for kind, pat in PROCS.items():
            if pat.search(cmd):
                found[pid] = kind
    return found


PROBE_HASHED = os.urandom(256 << 10)  # fits in a core's L2: the core's own speed
PROBE_SRC, PROBE_DST = bytearray(8 << 20), bytearray(8 << 20)  # the memory's


def probe():
    t0 = time.thread_time_ns()
    hashlib.sha256(PROBE_HASHED).digest()
    t1 = time.thread_time_ns()
    PROBE_DST[:] = PROBE_SRC
    t2 = time.thread_time_ns()
    return t1 - t0, t2 - t1


def record(path, seconds):
    PROBE_SRC[:] = os.urandom(len(PROBE_SRC))  # touched, so the copy faults nothing
    PROBE_DST[:] = PROBE_SRC
    end = time.time() + seconds
    procs, looked = {}, 0.0
    with open(path, 'w') as out:
        while time.time() < end:
            now = time.time()
            if now - looked > 2:  # processes of the next case come and go
                procs, looked = find_procs(), now
            out.write(f'T {int(now * 1000)}\n')
            for pid, kind in procs.items():
                sums = {}
                try:
                    tids = os.listdir(f'/proc/{pid}/task')
                except OSError:
                    continue
                for tid in tids:
                    try:
                        name = open(f'/proc/{pid}/task/{tid}/comm').read().strip()
                        run, wait, _ = open(f'/proc/{pid}/task/{tid}/schedstat').read().split()
                    except (OSError, ValueError):
                        continue
                    s = sums.setdefault(re.sub(r'\d+', 'N', name), [0, 0])
                    s[0] += int(run)
                    s[1] += int(wait)
                for name, (run, wait) in sums.items():
                    out.write(f'{kind}\t{name}\t{run}\t{wait}\n')
            out.write('S ' + open('/proc/stat').readline().split(None, 1)[1])
            vm = dict(line.split() for line in open('/proc/vmstat'))
            out.write('V ' + ' '.join(f'{k}={vm.get(k, 0)}' for k in VMSTAT) + '\n')
            others = []
            for pid in filter(str.isdigit, os.listdir('/proc')):
                if pid in procs:
                    continue
                try:
                    stat = open(f'/proc/{pid}/stat').read()
                except OSError:
                    continue
                close = stat.rfind(')')
                fields = stat[close + 2:].split()
                ticks = int(fields[11]) + int(fields[12])
                if ticks:
                    others.append(f"{pid}:{stat[stat.find('(') + 1:close].replace(' ', '_')}:{ticks}")
            out.write('O ' + ' '.join(others) + '\n')
            out.write('P %d %d\n' % probe())
            out.flush()
            time.sleep(max(0.0, 0.1 - (time.time() - now)))


def load(path):
    samples = []
    for line in open(path):
        if line.startswith('T '):
            samples.append({'t': int(line.split()[1]), 'threads': {}, 'others': {}})
        elif not samples:
            continue
        elif line.startswith('S '):
            samples[-1]['cpu'] = [int(x) for x in line.split()[1:] if x.isdigit()]
        elif line.startswith('V '):
            samples[-1]['vm'] = {k: int(v) for k, v in (kv.split('=') for kv in line.split()[1:])}
        elif line.startswith('P '):
            samples[-1]['probe'] = tuple(int(x) for x in line.split()[1:3])
        elif line.startswith('O '):
            for item in line.split()[1:]:
                pid, name, ticks = item.rsplit(':', 2)
                samples[-1]['others'][(pid, name)] = int(ticks)
        else:
            kind, name, run, wait = line.rstrip('\n').split('\t')
            samples[-1]['threads'][(kind, name)] = (int(run), int(wait))
    return [s for s in samples if 'cpu' in s and 'vm' in s]


def report(path, second0, lo, hi, step):
    samples = load(path)
    head = 'second  user  sys idle | ' + ' '.join(f'{n[:10]:>10}' for _, n in COLUMNS)
    print(head + ' | reclaim-scan compact-stall | busiest others (ticks)')
    t = lo
    while t < hi:
        win = [s for s in samples if t <= (s['t'] - second0) / 1000 < t + step]
        if len(win) >= 2:
            a, b = win[0], win[-1]
            ns = (b['t'] - a['t']) * 1e6
            cpu = [y - x for x, y in zip(a['cpu'], b['cpu'])]
            total = sum(cpu) or 1
            pct = lambda i: 200.0 * cpu[i] / total  # % of one core, 2 vCPUs
            runs = []
            for key in COLUMNS:
                x, y = a['threads'].get(key), b['threads'].get(key)
                runs.append(100.0 * (y[0] - x[0]) / ns if x and y else 0.0)
            vm = lambda k: b['vm'].get(k, 0) - a['vm'].get(k, 0)
            others = sorted(((v - a['others'].get(k, v), k[1]) for k, v in b['others'].items()),
                            reverse=True)[:3]
            print(f'{t:6.1f} {pct(0) + pct(1):5.0f} {pct(2):4.0f} {pct(3):4.0f} | ' +
                  ' '.join(f'{r:10.0f}' for r in runs) +
                  f' | {vm("pgscan_direct"):12d} {vm("compact_stall"):13d} | ' +
                  ' '.join(f'{n}={d}' for d, n in others if d > 0))
        t += step


def deltas(a, b, kind=None):
    """run, wait (ns) per thread name between two samples; a name whose sum fell (one of
    its threads ended) counts from 0 rather than negative."""
    out = {}
    for key, (run, wait) in b['threads'].items():
        if kind is not None and key[0] != kind:
            continue
        x = a['threads'].get(key)
        if x:
            out[key] = (max(0, run - x[0]), max(0, wait - x[1]))
    return out


def seconds(samples, second0, lo, hi):
    """Per second: t, its first and last sample, ns between them, the CPU line's deltas,
    their sum, and every sample of the second."""
    t = lo
    while t < hi:
        win = [s for s in samples if t <= (s['t'] - second0) / 1000 < t + 1]
        if len(win) >= 2:
            a, b = win[0], win[-1]
            cpu = [y - x for x, y in zip(a['cpu'], b['cpu'])]
            yield t, a, b, (b['t'] - a['t']) * 1e6, cpu, sum(cpu) or 1, win
        t += 1


def probe_us(win):
    """The median speed-probe CPU times (SHA-256, copy) of a second's samples, in microseconds."""
    got = [s['probe'] for s in win if 'probe' in s]
    if not got:
        return '    -    -'
    return '%5.0f %4.0f' % (statistics.median(g[0] for g in got) / 1e3,
                            statistics.median(g[1] for g in got) / 1e3)


def processes(path, second0, lo, hi):
    print('second  user  sys idle | probe sha copy us | per process: run/wait % of one core')
    for t, a, b, ns, cpu, total, win in seconds(load(path), second0, lo, hi):
        per = {}
        for (kind, _), (run, wait) in deltas(a, b).items():
            r = per.setdefault(kind, [0, 0])
            r[0] += run
            r[1] += wait
        print(f'{t:6.0f} {200.0 * (cpu[0] + cpu[1]) / total:5.0f} {200.0 * cpu[2] / total:4.0f} '
              f'{200.0 * cpu[3] / total:4.0f} | {probe_us(win)} | ' +
              '  '.join(f'{k} {100.0 * v[0] / ns:.0f}/{100.0 * v[1] / ns:.0f}' for k, v in sorted(per.items())))


def threads(path, second0, lo, hi, kind):
    print(f'second idle | busiest threads of {kind}: run/wait % of one core')
    for t, a, b, ns, cpu, total, _ in seconds(load(path), second0, lo, hi):
        rows = sorted(((100.0 * r / ns, 100.0 * w / ns, key[1]) for key, (r, w) in deltas(a, b, kind).items()),
                      reverse=True)
        print(f'{t:6.0f} {200.0 * cpu[3] / total:4.0f} | ' +
              '  '.join(f'{n[:14]} {r:.0f}/{w:.0f}' for r, w, n in rows[:7] if r + w >= 3))


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == 'record':
        record(sys.argv[2], float(sys.argv[3]))
    elif len(sys.argv) == 6 and sys.argv[1] == 'processes':
        processes(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    elif len(sys.argv) in (6, 7) and sys.argv[1] == 'threads':
        threads(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
                sys.argv[6] if len(sys.argv) == 7 else 'exactly')
    elif len(sys.argv) in (6, 7) and sys.argv[1] == 'report':
        report(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]),
               float(sys.argv[6]) if len(sys.argv) == 7 else 1.0)
    else:
        sys.exit(__doc__)
