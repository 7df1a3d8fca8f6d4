# How many `cpuid` instructions does a process run, and where? In a VM each one traps to the
# hypervisor (6-10 us on the benchmark VMs), so they weigh on cold starts (ARCHITECTURE.md,
# `cpu`). Counts every executed `cpuid` (a breakpoint on each one in the binary, ld.so and every
# loaded library), per (object, function):
#
#   gdb -q -batch -x scripts/count-cpuid.py --args target/release/quarry-bench driver quarry \
#       coldstart --index <index> --query 'griffith observatory'
import gdb, subprocess, re, collections, os

def cpuid_sites(path):
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', path], capture_output=True, text=True).stdout
    sites, func = [], '?'
    for line in out.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.*)>:', line)
        if m:
            func = m.group(1)
            continue
        m = re.match(r'^\s*([0-9a-f]+):\s+cpuid', line)
        if m:
            sites.append((int(m.group(1), 16), func))
    return sites

def mappings():
    pid = gdb.selected_inferior().pid
    bases = {}
    for line in open(f'/proc/{pid}/maps'):
        parts = line.split()
        if len(parts) >= 6 and parts[5].startswith('/'):
            lo = int(parts[0].split('-')[0], 16)
            off = int(parts[2], 16)
            path = parts[5]
            if path not in bases or lo - off < bases[path]:
                bases[path] = lo - off
    return bases

counts = collections.Counter()
class Site(gdb.Breakpoint):
    def __init__(self, addr, label):
        super().__init__(f'*{addr:#x}', internal=True)
        self.label = label
        self.addr = addr
        self.name_resolved = None
    def stop(self):
        if self.name_resolved is None:
            try:
                b = gdb.block_for_pc(self.addr)
                while b is not None and b.function is None:
                    b = b.superblock
                names = []
                while b is not None:
                    if b.function is not None and (not names or names[-1] != b.function.name):
                        names.append(b.function.name)
                    b = b.superblock
                self.name_resolved = ' <- '.join(names[:3]) or self.label
            except Exception:
                self.name_resolved = self.label
            self.name_resolved = self.label.split(':')[0] + ': ' + self.name_resolved
        counts[self.name_resolved] += 1
        return False

done = set()
def arm():
    for path, base in mappings().items():
        if path in done:
            continue
        done.add(path)
        # Non-PIE executables are mapped at their link address.
        hdr = subprocess.run(['readelf', '-h', path], capture_output=True, text=True).stdout
        if 'EXEC (Executable file)' in hdr:
            base = 0
        for off, func in cpuid_sites(path):
            Site(base + off, f'{os.path.basename(path)}:{func}')

gdb.execute('set pagination off')
gdb.execute('set confirm off')
gdb.execute('starti', to_string=True)
arm()
gdb.execute('set stop-on-solib-events 1')
while True:
    try:
        gdb.execute('continue', to_string=True)
    except gdb.error:
        break
    if not gdb.selected_inferior().pid:
        break
    arm()
total = sum(counts.values())
print(f'CPUID TOTAL {total}')
for k, v in counts.most_common():
    print(f'{v:4d} {k}')
