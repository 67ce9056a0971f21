#!/bin/sh
# mpi.sh MODE PROGRAM ARGS... — libflowrt's collectives and frt_main's ranks under Open MPI's mpirun
# (tests/runtime/meson.build runs each mode). Exit 77 (skipped) when mpirun is missing.
#
#   checks NP ARGS...        mpirun -np NP coll_check ARGS: every rank must report its checks passed
#   checks-mpi NP ARGS...    the same with FLOWRT_COLL_SHM=0: on MPI, not the shared segment of one machine
#   checks-chunked NP ARGS...  the same with FLOWRT_COLL_SHM_BYTES=64: every call of more than a few elements
#                            runs through the shared segment in chunks
#   checks-split NP ARGS...  the same with FLOWRT_COLL_MPI_MAX_COUNT=3 on MPI (FLOWRT_COLL_SHM=0): the MPI
#                            backend splits large calls or refuses them, which coll_check expects
#   main WORK                ranked_main (frt_main with a hand-built 2- or 4-rank descriptor): results printed
#                            and written by rank 0 alone, the wrong number of ranks, no mpirun, no libmpi, a
#                            collective failing on one rank, a bad input file on rank 0, --help, --profile
#   gpu-coll                 gpu_coll_check on 2 ranks: the GPU runner's collective entries on the SIMT emulator
#   nccl                     nccl_check on 2 ranks: with two GPUs NCCL starts; without, every rank says why
#                            (no driver, the CUDA stub, no libnccl), naming the first rank that failed
#   faults WORK              coll_check loop with one rank killed (kill -9) mid-collective, and coll_check hang
#                            with one rank stopped: every rank gone and mpirun non-zero within 60 s, and a
#                            message naming the rank; a rank slower than its peers but within the timeout
#                            is waited for. On the path the caller's FLOWRT_COLL_SHM picks (meson runs both)
set -u
mode=$1 prog=$2
shift 2
command -v mpirun >/dev/null 2>&1 || { echo "mpirun not found: skipped"; exit 77; }
# As root in CI; more ranks than this machine's 2 cores.
MPIRUN="mpirun --allow-run-as-root --oversubscribe"
# Open MPI's session directory under a base of this test's own: two mpirun started at once by parallel tests
# race on creating the shared /tmp/ompi.HOST.UID ("mkdir ... File exists", orte_init fails).
OMPI_MCA_orte_tmpdir_base=$(mktemp -d "${TMPDIR:-/tmp}/ompi-XXXXXX") || exit 1
export OMPI_MCA_orte_tmpdir_base
trap 'rm -rf "$OMPI_MCA_orte_tmpdir_base"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect FILE TEXT: FILE holds TEXT (a fixed string).
expect() { grep -qF -- "$2" "$1" || { fail "$3: no '$2' in:"; cat "$1"; }; }

case "$mode" in
checks | checks-mpi | checks-chunked | checks-split)
  np=$1
  shift
  case "$mode" in
  checks-mpi) export FLOWRT_COLL_SHM=0 ;;
  checks-chunked) export FLOWRT_COLL_SHM_BYTES=64 ;;
  checks-split) export FLOWRT_COLL_MPI_MAX_COUNT=3 FLOWRT_COLL_SHM=0 ;;
  esac
  out=$(mktemp)
  timeout 240 $MPIRUN -np "$np" "$prog" "$@" >"$out" 2>&1
  rc=$?
  cat "$out"
  [ $rc -eq 0 ] || fail "mpirun -np $np exited $rc"
  n=$(grep -c "checks passed" "$out")
  [ "$n" -eq "$np" ] || fail "$n of $np ranks reported their checks passed"
  rm -f "$out"
  ;;

gpu-coll)
  out=$(mktemp)
  timeout 240 $MPIRUN -np 2 "$prog" >"$out" 2>&1
  rc=$?
  cat "$out"
  [ $rc -eq 0 ] || fail "mpirun -np 2 exited $rc"
  [ "$(grep -c "GPU collectives passed" "$out")" -eq 2 ] || fail "not both ranks passed"
  rm -f "$out"
  ;;

nccl)
  out=$(mktemp)
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  if [ "${gpus:-0}" -ge 2 ]; then
    timeout 240 $MPIRUN -np 2 "$prog" 2 >"$out" 2>&1
    rc=$?
    cat "$out"
    [ $rc -eq 0 ] || fail "NCCL on 2 GPUs: mpirun exited $rc"
    [ "$(grep -c 'NCCL started on 2 ranks' "$out")" -eq 2 ] || fail "NCCL on 2 GPUs: not started on both ranks"
  else
    # nccl_check NAME ENV...: 2 ranks, both must fail with exit 3 and say TEXT ($want).
    refuse() {
      name=$1
      shift
      env "$@" timeout 240 $MPIRUN -np 2 "$prog" 2 >"$out" 2>&1
      rc=$?
      cat "$out"
      [ $rc -ne 0 ] || fail "$name: mpirun exited 0"
      [ "$(grep -c "NCCL failed: .*$want" "$out")" -eq 2 ] || fail "$name: not both ranks said '$want'"
    }
    if ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2 '; then
      want="needs a GPU: no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file"
      refuse "no driver" FLOWRT_CUDA_LIBRARY=/nonexistent/libcuda.so.1
      stub=/usr/local/cuda/lib64/stubs/libcuda.so
      want="needs a GPU: cuInit: CUDA_ERROR_STUB_LIBRARY (the stub library, not a driver"
      [ ! -f $stub ] || refuse "the stub" FLOWRT_CUDA_LIBRARY=$stub
    fi
    want="need NCCL, which cannot be loaded: /nonexistent/libnccl.so.2: cannot open shared object file"
    refuse "no NCCL" FLOWRT_NCCL_LIBRARY=/nonexistent/libnccl.so.2
  fi
  rm -f "$out"
  ;;

main)
  work=$1
  rm -rf "$work"
  mkdir -p "$work"
  # x = [1..6] as a .npy (numpy's v1 header, written here so the test needs no numpy).
  printf "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }" >"$work/x.npy"
  printf '%*s\n' 60 '' >>"$work/x.npy"
  printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100\000\000\240\100\000\000\300\100' >>"$work/x.npy"
  run() { # run NAME NP ARGS...: output in $work/NAME.out, exit status in $rc
    name=$1 np=$2
    shift 2
    timeout 120 $MPIRUN -np "$np" "$prog" "$@" >"$work/$name.out" 2>&1
    rc=$?
  }
  # 2 ranks: y = x * (1 + 2), printed once, by rank 0; written by rank 0.
  RANKS=2 run two 2 "$work/x.npy" --print --output-dir "$work/out2"
  [ $rc -eq 0 ] || { fail "2 ranks exited $rc"; cat "$work/two.out"; }
  expect "$work/two.out" "values: [3, 6, 9, 12, 15, 18]" "2 ranks"
  [ "$(grep -c "^output 0" "$work/two.out")" -eq 1 ] || fail "2 ranks: the output is not printed exactly once"
  [ -f "$work/out2/output_0.npy" ] || fail "2 ranks: no output_0.npy"
  # 4 ranks on a 2x2 mesh: y = x * 10.
  RANKS=4 MESH=2x2 run four 4 "$work/x.npy"
  [ $rc -eq 0 ] || { fail "4 ranks exited $rc"; cat "$work/four.out"; }
  expect "$work/four.out" "values: [10, 20, 30, 40, 50, 60]" "4 ranks"
  # --profile: the communication line, by rank 0.
  RANKS=2 run profile 2 "$work/x.npy" --profile --bench 3
  [ $rc -eq 0 ] || fail "--profile exited $rc"
  expect "$work/profile.out" "communication: " "--profile"
  [ "$(grep -c "^latency" "$work/profile.out")" -eq 1 ] || fail "--bench: latency not printed exactly once"
  # The wrong number of ranks: one clear line, non-zero.
  RANKS=4 run wrong 2 "$work/x.npy"
  [ $rc -ne 0 ] || fail "4-rank program on 2 ranks exited 0"
  expect "$work/wrong.out" "this program was compiled for 4 ranks; it was started with 2: run it with mpirun -np 4" \
    "wrong rank count"
  [ "$(grep -c "error:" "$work/wrong.out")" -eq 1 ] || fail "wrong rank count: not exactly one error line"
  # Not started by mpirun.
  RANKS=2 timeout 60 "$prog" "$work/x.npy" >"$work/alone.out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "without mpirun: exit $rc, want 1"
  expect "$work/alone.out" "error: this program was compiled for 2 ranks: run it with mpirun -np 2" "without mpirun"
  # --help needs no mpirun.
  RANKS=2 timeout 60 "$prog" --help >"$work/help.out" 2>&1 || fail "--help without mpirun failed"
  expect "$work/help.out" "ranks: 2: run it with mpirun -np 2" "--help"
  # No Open MPI library.
  FLOWRT_MPI_LIBRARY=/nonexistent/libmpi.so.40 RANKS=2 run nolib 2 "$work/x.npy"
  [ $rc -ne 0 ] || fail "without libmpi: exit 0"
  expect "$work/nolib.out" "needs Open MPI, which cannot be loaded" "without libmpi"
  # A collective that fails on rank 1 only: its message, naming the rank and the node; rank 0, waiting in the
  # collective, is ended too (MPI_Abort).
  FAIL_RANK=1 RANKS=2 run coll_fail 2 "$work/x.npy"
  [ $rc -ne 0 ] || fail "a failed collective: exit 0"
  expect "$work/coll_fail.out" \
    "rank 1: ranked_main: error: model 'ranked': node 'sum' (flow.all_reduce): all_reduce: mesh axis 7 does not exist (the mesh has 1)" \
    "failed collective"
  # Rank 0 cannot read its input: every rank ends at once, the message from rank 0.
  RANKS=2 run missing 2 "$work/nope.npy"
  [ $rc -ne 0 ] || fail "a missing input: exit 0"
  expect "$work/missing.out" "rank 0: ranked_main: error: input 'x': " "missing input"
  [ "$(grep -c "error:" "$work/missing.out")" -eq 1 ] || fail "a missing input: not exactly one error line"
  # A usage error, the same on every rank: reported once.
  RANKS=2 run usage 2 --frobnicate
  [ $rc -eq 2 ] || fail "a usage error: exit $rc, want 2"
  [ "$(grep -c "unknown option '--frobnicate'" "$work/usage.out")" -eq 1 ] || {
    fail "a usage error: not reported exactly once"
    cat "$work/usage.out"
  }
  ;;

faults)
  work=$1
  rm -rf "$work"
  mkdir -p "$work"
  # kill -9 one rank of two while both loop on all_reduce.
  start=$(date +%s)
  (timeout 90 $MPIRUN -np 2 "$prog" loop "$work" >"$work/kill.out" 2>&1; echo $? >"$work/kill.rc") &
  job=$!
  for _ in $(seq 300); do [ -s "$work/pid.1" ] && [ -s "$work/pid.0" ] && break; sleep 0.1; done
  if [ -s "$work/pid.1" ]; then
    sleep 1 # inside the loop of collectives by now
    kill -9 "$(cat "$work/pid.1")"
    wait $job
    took=$(($(date +%s) - start))
    rc=$(cat "$work/kill.rc")
    [ "$rc" -ne 0 ] || fail "a killed rank: mpirun exited 0"
    [ "$rc" -ne 124 ] && [ "$took" -le 60 ] || fail "a killed rank: the job took ${took} s (mpirun exit $rc)"
    expect "$work/kill.out" "rank 1" "a killed rank"
    # Gone, or a zombie that its parent (mpirun's daemon, gone itself) left for init to reap.
    state=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\).*/\1/p' "/proc/$(cat "$work/pid.0")/stat" 2>/dev/null)
    [ -z "$state" ] || [ "$state" = Z ] || fail "a killed rank: rank 0 still runs (state $state)"
    echo "killed rank 1: mpirun exited $rc after ${took} s"
  else
    wait $job
    fail "the ranks never started:"
    cat "$work/kill.out"
  fi
  # One rank stops (SIGSTOP: hung, not dead) before an all_reduce: the watchdog of the other ends it.
  start=$(date +%s)
  FLOWRT_COLL_TIMEOUT=3 timeout 90 $MPIRUN -np 2 "$prog" hang >"$work/hang.out" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  [ $rc -ne 0 ] || fail "a hung rank: mpirun exited 0"
  [ $rc -ne 124 ] && [ "$took" -le 60 ] || fail "a hung rank: the job took ${took} s (mpirun exit $rc)"
  expect "$work/hang.out" "rank 0: error: all_reduce has waited 3 s for all ranks (FLOWRT_COLL_TIMEOUT)" "a hung rank"
  echo "hung rank 1: mpirun exited $rc after ${took} s"
  # A rank that is slow (2 s) but within the timeout (5 s) is waited for.
  FLOWRT_COLL_TIMEOUT=5 timeout 90 $MPIRUN -np 2 "$prog" slow >"$work/slow.out" 2>&1 || {
    fail "a slow rank within FLOWRT_COLL_TIMEOUT: mpirun failed"
    cat "$work/slow.out"
  }
  [ "$(grep -c "waited for a slow rank" "$work/slow.out")" -eq 2 ] || fail "a slow rank: not both ranks finished"
  # A bad FLOWRT_COLL_TIMEOUT is refused before anything starts.
  FLOWRT_COLL_TIMEOUT=soon timeout 60 $MPIRUN -np 2 "$prog" 2 >"$work/timeout.out" 2>&1 && fail "a bad FLOWRT_COLL_TIMEOUT: exit 0"
  expect "$work/timeout.out" "FLOWRT_COLL_TIMEOUT wants whole seconds (0: none), got 'soon'" "a bad FLOWRT_COLL_TIMEOUT"
  ;;

*)
  echo "usage: mpi.sh checks|checks-mpi|checks-chunked|checks-split|main|faults PROGRAM ARGS..." >&2
  exit 2
  ;;
esac
[ $fails -eq 0 ] && echo "mpi.sh $mode: ok"
[ $fails -eq 0 ]
