# lit configuration for flowc's text-in/text-out tests.
#
# Each test file states how it runs on its `// RUN:` (or `# RUN:`) lines. Substitutions:
#   %flowc       the flowc built by meson (also on PATH as `flowc`)
#   %onnx_data   /usr/share/libonnx-testdata/data (Debian libonnx-testdata, a declared dependency)
# FileCheck, not, count and mlir-opt come from LLVM 19 (/usr/lib/llvm-19/bin, put first on PATH).
#
# Parameters (lit --param): flowc=PATH (or the FLOWC environment variable), exec_root=DIR for the
# Output/ folders (default: next to the tests, which tools/run_lit.sh and meson never use).
import os

import lit.formats

config.name = 'flowc'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.mlir', '.test']
config.excludes = ['Inputs', 'README.md', 'lit.cfg.py']
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

exec_root = lit_config.params.get('exec_root')
if exec_root:
    config.test_exec_root = exec_root

flowc = lit_config.params.get('flowc') or os.environ.get('FLOWC')
if not flowc:
    lit_config.fatal('no flowc binary: pass --param flowc=PATH or set FLOWC (tools/run_lit.sh does this)')
flowc = os.path.abspath(flowc)
if not os.access(flowc, os.X_OK):
    lit_config.fatal('flowc binary %s is not executable; build it first' % flowc)

llvm_bin = '/usr/lib/llvm-19/bin'
for tool in ('FileCheck', 'not'):
    if not os.access(os.path.join(llvm_bin, tool), os.X_OK):
        lit_config.fatal('%s not found in %s (install llvm-19-tools)' % (tool, llvm_bin))

config.environment['PATH'] = os.pathsep.join(
    [llvm_bin, os.path.dirname(flowc), config.environment.get('PATH', os.environ.get('PATH', ''))])
# Sanitizer settings of an ASan build reach the tests.
for var in ('ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# %memcap COMMAND: runs COMMAND so that an allocation of gigabytes fails loudly (a crash, not exit 1), which
# makes "no large allocation" checkable. An ASan build reserves terabytes of address space, so there ASan's
# own limit (256 MiB per allocation) does it; otherwise a 1 GiB address-space limit (prlimit) does.
with open(flowc, 'rb') as f:
    asan = b'__asan_init' in f.read()
if asan:
    asan_options = ':'.join(o for o in (config.environment.get('ASAN_OPTIONS'), 'max_allocation_size_mb=256',
                                        'allocator_may_return_null=0') if o)
    config.substitutions.append(('%memcap', 'env ASAN_OPTIONS=%s' % asan_options))
else:
    config.substitutions.append(('%memcap', 'prlimit --as=1073741824'))

config.substitutions.append(('%flowc', flowc))
config.substitutions.append(('%onnx_data', '/usr/share/libonnx-testdata/data'))

import shutil
if shutil.which('dot'):
    config.available_features.add('graphviz')

# Tests that run AVX-512 code (--cpu skylake-avx512) need a host that has it; CI hosts may not.
try:
    with open('/proc/cpuinfo') as f:
        if any(l.startswith('flags') and ' avx512f ' in l + ' ' for l in f):
            config.available_features.add('avx512')
except OSError:
    pass
