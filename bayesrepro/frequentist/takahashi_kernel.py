"""Takahashi's recurrences (``selected_inverse.py``) as machine code, compiled by LLVM through llvmlite in 0.05 s.

The fits that need them (the Laplace fits of 0/1 crowd designs) take one to two
seconds in all, and loading the same loop through numba (its import and its
on-disk cache) took 0.3 s of that. llvmlite comes with numba; the function is
written in LLVM's own language, compiled once per process and called through
ctypes. Its loops (Z = A⁻¹, L and D as in ``selected_inverse.py``): for j from
``done`` − 1 down to 0, mark column j's rows (``mark[i]`` = the position of row
i in column j) and clear its entries; for each entry (k, j), Z_kj −= Z_kk L_kj,
then for each entry (i, k) of column k whose row is marked, Z_ij −= Z_ik L_kj and
Z_kj −= Z_ik L_ij, counting them: fewer than the entries below (k, j) in column j
means the pattern is not closed under elimination (return 0); finally
Z_jj = 1/D_j − Σ L_ij Z_ij and the marks are cleared."""

from __future__ import annotations

import ctypes
import functools

import numpy as np

TAKAHASHI_IR = r"""
define i64 @takahashi(ptr noalias %indptr, ptr noalias %indices, ptr noalias %lower, ptr noalias %inverse_pivots,
                      ptr noalias %values, ptr noalias %diagonal, i64 %done, ptr noalias %mark) {
entry:
  %j.slot = alloca i64
  %p.slot = alloca i64
  %q.slot = alloca i64
  %hits.slot = alloca i64
  %z.slot = alloca double
  store i64 %done, ptr %j.slot
  br label %column

column:                                   ; j from done - 1 down to 0
  %j.next = load i64, ptr %j.slot
  %more = icmp sgt i64 %j.next, 0
  br i1 %more, label %column.body, label %finished

column.body:
  %j = sub i64 %j.next, 1
  store i64 %j, ptr %j.slot
  %start.at = getelementptr i64, ptr %indptr, i64 %j
  %start = load i64, ptr %start.at
  %end.at = getelementptr i64, ptr %indptr, i64 %j.next
  %end = load i64, ptr %end.at
  store i64 %start, ptr %p.slot
  br label %mark.loop

mark.loop:                                ; mark[indices[p]] = p; values[p] = 0
  %pm = load i64, ptr %p.slot
  %pm.in = icmp slt i64 %pm, %end
  br i1 %pm.in, label %mark.body, label %mark.done
mark.body:
  %pm.row.at = getelementptr i64, ptr %indices, i64 %pm
  %pm.row = load i64, ptr %pm.row.at
  %pm.mark.at = getelementptr i64, ptr %mark, i64 %pm.row
  store i64 %pm, ptr %pm.mark.at
  %pm.value.at = getelementptr double, ptr %values, i64 %pm
  store double 0.0, ptr %pm.value.at
  %pm.1 = add i64 %pm, 1
  store i64 %pm.1, ptr %p.slot
  br label %mark.loop
mark.done:
  store i64 %start, ptr %p.slot
  br label %entry.loop

entry.loop:                               ; every k = indices[p] of column j
  %p = load i64, ptr %p.slot
  %p.in = icmp slt i64 %p, %end
  br i1 %p.in, label %entry.body, label %entry.done
entry.body:
  %k.at = getelementptr i64, ptr %indices, i64 %p
  %k = load i64, ptr %k.at
  %l.at = getelementptr double, ptr %lower, i64 %p
  %l = load double, ptr %l.at
  %vp.at = getelementptr double, ptr %values, i64 %p
  %dk.at = getelementptr double, ptr %diagonal, i64 %k
  %dk = load double, ptr %dk.at
  %vp0 = load double, ptr %vp.at
  %dkl = fmul double %dk, %l
  %vp1 = fsub double %vp0, %dkl
  store double %vp1, ptr %vp.at
  store i64 0, ptr %hits.slot
  %k.start.at = getelementptr i64, ptr %indptr, i64 %k
  %k.start = load i64, ptr %k.start.at
  %k.1 = add i64 %k, 1
  %k.end.at = getelementptr i64, ptr %indptr, i64 %k.1
  %k.end = load i64, ptr %k.end.at
  store i64 %k.start, ptr %q.slot
  br label %inner.loop

inner.loop:                               ; entries q of column k whose row is in column j's pattern
  %q = load i64, ptr %q.slot
  %q.in = icmp slt i64 %q, %k.end
  br i1 %q.in, label %inner.body, label %inner.done
inner.body:
  %iq.at = getelementptr i64, ptr %indices, i64 %q
  %iq = load i64, ptr %iq.at
  %m.at = getelementptr i64, ptr %mark, i64 %iq
  %m = load i64, ptr %m.at
  %hit = icmp sge i64 %m, 0
  br i1 %hit, label %inner.hit, label %inner.next
inner.hit:
  %hits = load i64, ptr %hits.slot
  %hits.1 = add i64 %hits, 1
  store i64 %hits.1, ptr %hits.slot
  %vq.at = getelementptr double, ptr %values, i64 %q
  %vq = load double, ptr %vq.at
  %vm.at = getelementptr double, ptr %values, i64 %m
  %vm = load double, ptr %vm.at
  %vql = fmul double %vq, %l
  %vm.1 = fsub double %vm, %vql
  store double %vm.1, ptr %vm.at
  %lm.at = getelementptr double, ptr %lower, i64 %m
  %lm = load double, ptr %lm.at
  %vp.now = load double, ptr %vp.at
  %vqlm = fmul double %vq, %lm
  %vp.2 = fsub double %vp.now, %vqlm
  store double %vp.2, ptr %vp.at
  br label %inner.next
inner.next:
  %q.1 = add i64 %q, 1
  store i64 %q.1, ptr %q.slot
  br label %inner.loop
inner.done:
  %hits.end = load i64, ptr %hits.slot
  %after = sub i64 %end, %p
  %expected = sub i64 %after, 1
  %closed = icmp eq i64 %hits.end, %expected
  br i1 %closed, label %entry.next, label %not.closed
entry.next:
  %p.1 = add i64 %p, 1
  store i64 %p.1, ptr %p.slot
  br label %entry.loop

entry.done:                               ; the diagonal, and column j's marks cleared
  %ipj.at = getelementptr double, ptr %inverse_pivots, i64 %j
  %ipj = load double, ptr %ipj.at
  store double %ipj, ptr %z.slot
  store i64 %start, ptr %p.slot
  br label %diag.loop
diag.loop:
  %pd = load i64, ptr %p.slot
  %pd.in = icmp slt i64 %pd, %end
  br i1 %pd.in, label %diag.body, label %diag.done
diag.body:
  %pd.l.at = getelementptr double, ptr %lower, i64 %pd
  %pd.l = load double, ptr %pd.l.at
  %pd.v.at = getelementptr double, ptr %values, i64 %pd
  %pd.v = load double, ptr %pd.v.at
  %z = load double, ptr %z.slot
  %lv = fmul double %pd.l, %pd.v
  %z.1 = fsub double %z, %lv
  store double %z.1, ptr %z.slot
  %pd.row.at = getelementptr i64, ptr %indices, i64 %pd
  %pd.row = load i64, ptr %pd.row.at
  %pd.mark.at = getelementptr i64, ptr %mark, i64 %pd.row
  store i64 -1, ptr %pd.mark.at
  %pd.1 = add i64 %pd, 1
  store i64 %pd.1, ptr %p.slot
  br label %diag.loop
diag.done:
  %z.end = load double, ptr %z.slot
  %dj.at = getelementptr double, ptr %diagonal, i64 %j
  store double %z.end, ptr %dj.at
  br label %column

not.closed:
  ret i64 0
finished:
  ret i64 1
}
"""


def takahashi(indptr: np.ndarray, indices: np.ndarray, lower: np.ndarray, inverse_pivots: np.ndarray,
              values: np.ndarray, diagonal: np.ndarray, done: int) -> bool:
    """Z below the diagonal into ``values`` (L's pattern) and its diagonal into ``diagonal`` for the columns before
    ``done``; False where the pattern is not a filled factor's. ``indptr`` and ``indices`` int64, the rest float64,
    all contiguous (checked)."""
    arrays = (indptr, indices, lower, inverse_pivots, values, diagonal)
    for array, dtype in zip(arrays, (np.int64, np.int64, np.float64, np.float64, np.float64, np.float64)):
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise TypeError("takahashi takes contiguous int64 indices and float64 values")
    if not (values.flags.writeable and diagonal.flags.writeable):
        raise TypeError("takahashi writes into values and diagonal")
    mark = np.full(len(indptr) - 1, -1, dtype=np.int64)
    return bool(_compiled()(*(array.ctypes.data for array in arrays), int(done), mark.ctypes.data))


@functools.cache
def _compiled():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine(opt=3)
    module = llvm.parse_assembly(TAKAHASHI_IR)
    module.verify()
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(speed_level=3))
    builder.getModulePassManager().run(module, builder)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    pointer = ctypes.c_void_p
    signature = ctypes.CFUNCTYPE(ctypes.c_int64, *[pointer] * 6, ctypes.c_int64, pointer)
    function = signature(engine.get_function_address("takahashi"))
    function.engine = engine   # the machine code lives as long as its engine
    return function
