#pragma once
// What the binding's functions share: NumPy arrays that own a std::vector (no copy), and
// running a computation with the GIL released while the calling thread keeps watching for
// signals (Ctrl-C).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <vector>

namespace nadyn::python {

namespace py = pybind11;

// The vector moves into a capsule that the array keeps alive: no copy of the data.
template <class T>
py::array_t<T> owning_array(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
    auto* owner = new std::vector<T>(std::move(values));
    py::capsule capsule(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
    return py::array_t<T>(std::move(shape), owner->data(), capsule);
}

// Runs `work` on a worker thread with the GIL released; the calling thread wakes every
// 50 ms, takes the GIL and runs Python's signal handlers (PyErr_CheckSignals acts only on
// the main thread, which is why the computation is not run on the calling thread). When a
// handler raises (KeyboardInterrupt on Ctrl-C), the stop token is set, so the run writes
// its current state as a last frame and returns `interrupted`; the exception is returned
// (None otherwise) for the caller to raise once the results are safe. An exception thrown
// by `work` is rethrown here, on the calling thread.
// `on_wake` (optional) runs on each wake-up too, with the GIL, after the signal handlers: a
// progress callback reads there what the worker left in atomics. When it raises, the run is
// stopped as by a signal and its exception returned.
py::object run_watching_signals(const std::function<void(const std::atomic<bool>* stop)>& work,
                                const std::function<void()>& on_wake = {});

void bind_simulate(py::module_& m);
void bind_sweep(py::module_& m);
void bind_fits(py::module_& m);
void bind_unselectable(py::module_& m);
void bind_plateaus(py::module_& m);
void bind_meanfield(py::module_& m);

} // namespace nadyn::python
