// nadyn sweep over MPI ranks: rank 0 hands out run indices and writes the records the
// workers send back (include/nadyn/parallel/mpi_sweep.hpp).
#include "nadyn/parallel/mpi_sweep.hpp"

#include "experiment/sweep_engine.hpp"
#include "nadyn/experiment/run.hpp"
#include "nadyn/model/error.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <type_traits>

namespace nadyn {

namespace {

// Message tags between a worker and rank 0.
enum tag : int {
    request = 1, // worker -> 0: give me a run (no payload)
    assign = 2,  // 0 -> worker: a run index, or -1: nothing more
    record = 3,  // worker -> 0: one finished run's record (bytes)
    retired = 4, // worker -> 0: all my runs are reported, I take no more
};

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// A byte buffer written and read in the same order; both ends are this program, on machines
// of the same architecture (an MPI job), so values travel in their memory representation.
class bytes_out {
  public:
    template <class T> void put(const T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        const auto* p = reinterpret_cast<const char*>(&value);
        m_data.insert(m_data.end(), p, p + sizeof(T));
    }
    void put(const std::string& text) {
        put(std::uint64_t(text.size()));
        m_data.insert(m_data.end(), text.begin(), text.end());
    }
    template <class T> void put(const std::vector<T>& values) {
        static_assert(std::is_trivially_copyable_v<T>);
        put(std::uint64_t(values.size()));
        const auto* p = reinterpret_cast<const char*>(values.data());
        m_data.insert(m_data.end(), p, p + values.size() * sizeof(T));
    }
    [[nodiscard]] const std::vector<char>& data() const { return m_data; }

  private:
    std::vector<char> m_data;
};

class bytes_in {
  public:
    explicit bytes_in(const std::vector<char>& data) : m_data(data) {}
    template <class T> void get(T& value) {
        static_assert(std::is_trivially_copyable_v<T>);
        take(&value, sizeof(T));
    }
    void get(std::string& text) {
        std::uint64_t size = 0;
        get(size);
        text.resize(size);
        take(text.data(), size);
    }
    template <class T> void get(std::vector<T>& values) {
        static_assert(std::is_trivially_copyable_v<T>);
        std::uint64_t size = 0;
        get(size);
        values.resize(size);
        take(values.data(), size * sizeof(T));
    }

  private:
    void take(void* into, std::size_t count) {
        if (m_at + count > m_data.size())
            throw std::runtime_error("a run record from a worker is truncated");
        std::memcpy(into, m_data.data() + m_at, count);
        m_at += count;
    }
    const std::vector<char>& m_data;
    std::size_t m_at = 0;
};

// The fields a worker sends after the index and the observable count, in one list for both
// directions so that encode and decode cannot disagree.
template <class Record, class Field> void each_field(Record& r, Field&& field) {
    field(r.status);
    for (auto& values : r.observables)
        field(values);
    field(r.times);
    field(r.positions);
    field(r.magnitudes);
    field(r.clustering_times);
    field(r.merges); // merge_event: trivially copyable
    field(r.frames);
    field(r.rhs);
    field(r.accepted);
    field(r.wall);
    field(r.plateau_length);
    field(r.plateau_clusters);
    field(r.parameters);
    field(r.failure);
}

std::vector<char> encode(const sweep_record& r) {
    bytes_out out;
    out.put(std::uint64_t(r.index));
    out.put(std::uint64_t(r.observables.size()));
    each_field(r, [&](const auto& value) { out.put(value); });
    return out.data();
}

sweep_record decode(const std::vector<char>& bytes) {
    bytes_in in(bytes);
    sweep_record r;
    std::uint64_t index = 0, observables = 0;
    in.get(index);
    in.get(observables);
    r.index = index;
    r.observables.resize(observables);
    each_field(r, [&](auto& value) { in.get(value); });
    return r;
}

std::vector<char> receive_bytes(int from, int tag, MPI_Status* status = nullptr) {
    MPI_Status probe;
    MPI_Probe(from, tag, MPI_COMM_WORLD, &probe);
    int count = 0;
    MPI_Get_count(&probe, MPI_BYTE, &count);
    std::vector<char> bytes(static_cast<std::size_t>(count));
    MPI_Recv(bytes.data(), count, MPI_BYTE, probe.MPI_SOURCE, probe.MPI_TAG, MPI_COMM_WORLD,
             status ? status : MPI_STATUS_IGNORE);
    return bytes;
}

// Rank 0's string broadcast to every rank.
std::string broadcast(std::string text) {
    std::uint64_t size = text.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    text.resize(size);
    MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, MPI_COMM_WORLD);
    return text;
}

// Outcome codes rank 0 broadcasts: what the other ranks throw.
enum outcome : int { fine = 0, bad_input = 2, failed_io = 1 };

// Every rank reads the experiment's input files (check_input_files: as the runs will) and
// hashes them; the ranks compare the hashes. A rank that cannot read them, or read other
// contents than rank 0 (the same `file:` path naming another file in its working
// directory), ends every rank with one message, before any file is touched.
void agree_on_input_files(const parallel_context& context, const experiment& e) {
    std::string refusal;
    std::uint64_t hash = 14695981039346656037ULL; // FNV-1a of the paths and their SHA-256s
    try {
        if (!context.root()) e.check_input_files(); // rank 0 did in prepare
        for (const auto& [path, sha256] : e.input_file_hashes())
            for (const std::string& part : {path, sha256})
                for (const char c : part + '\n')
                    hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    } catch (const std::exception& error) {
        refusal = error.what();
    }
    const start_agreement agreed = context.agree_on_inputs(hash, !refusal.empty());
    if (agreed.refused_rank >= 0) {
        const std::string text = context.text_from(agreed.refused_rank, refusal);
        throw input_error(agreed.refused_rank == 0
                              ? text
                              : "rank " + std::to_string(agreed.refused_rank) + ": " + text);
    }
    if (agreed.differing_rank >= 0)
        throw input_error("MPI rank " + std::to_string(agreed.differing_rank) +
                          " read other input files than rank 0 (a file: path that names another "
                          "file there, e.g. from another working directory); every rank must "
                          "read the same files, so none runs");
}

[[noreturn]] void throw_as_rank_zero(int code) {
    // The message is rank 0's; this rank's is never printed (only rank 0 prints).
    if (code == bad_input) throw input_error("rank 0 refused the input");
    throw io_error("rank 0 failed");
}

// Runs `step` on rank 0 and tells every rank how it went: rank 0 rethrows its own error, the
// others throw one of the same kind (input_error: exit 2, else exit 1), so that every rank
// leaves together before any run starts.
template <class Step> void agree_on_root_step(const parallel_context& context, Step&& step) {
    int code = fine;
    std::exception_ptr failure;
    if (context.root()) {
        try {
            step();
        } catch (const input_error&) {
            code = bad_input;
            failure = std::current_exception();
        } catch (...) {
            code = failed_io;
            failure = std::current_exception();
        }
    }
    MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (failure) std::rethrow_exception(failure);
    if (code != fine) throw_as_rank_zero(code);
}

// One rank's runs in flight, each on a thread of its own, as in the one-process sweep: side by
// side with one thread each, or one at a time with the rank's cores. Their records wait here
// for the rank's main thread, the only one that calls MPI (MPI_THREAD_FUNNELED) or writes.
class rank_runs {
  public:
    rank_runs(const experiment& e, const rank_schedule& schedule, const std::atomic<bool>* stop)
        : m_e(e), m_layout(detail::layout_of(e)), m_schedule(schedule), m_stop(stop) {}
    rank_runs(const rank_runs&) = delete;
    rank_runs& operator=(const rank_runs&) = delete;
    ~rank_runs() {
        for (auto& [index, thread] : m_running)
            thread.join();
    }

    [[nodiscard]] bool has_free_slot() const {
        return m_running.size() < std::size_t(std::max(m_schedule.jobs, 1));
    }
    [[nodiscard]] bool idle() const { return m_running.empty(); }

    void start(std::size_t index) {
        m_running.emplace(index, std::thread([this, index] {
                              sweep_record r = detail::run_point(m_e, m_layout, index,
                                                                 m_schedule.threads, m_stop);
                              std::lock_guard<std::mutex> guard(m_lock);
                              m_finished.push_back(std::move(r));
                              m_ready.notify_one();
                          }));
    }

    // The records finished so far, their threads joined; waits up to `patience` for one when
    // none is there yet.
    std::deque<sweep_record> take(std::chrono::microseconds patience) {
        std::deque<sweep_record> batch;
        {
            std::unique_lock<std::mutex> guard(m_lock);
            if (m_finished.empty() && patience.count() > 0 && !m_running.empty())
                m_ready.wait_for(guard, patience, [&] { return !m_finished.empty(); });
            batch.swap(m_finished);
        }
        for (const sweep_record& r : batch) {
            auto thread = m_running.find(r.index);
            thread->second.join();
            m_running.erase(thread);
        }
        return batch;
    }

  private:
    const experiment& m_e;
    const sweep_layout m_layout;
    const rank_schedule m_schedule;
    const std::atomic<bool>* m_stop;
    std::mutex m_lock;
    std::condition_variable m_ready;
    std::deque<sweep_record> m_finished;
    std::map<std::size_t, std::thread> m_running;
};

// Rank 0: hands out `todo` to its own runs and to the other ranks, and writes what comes back,
// until its runs are done and every other rank has retired.
ranks_sweep_result coordinate(const experiment& e, sweep_file& file,
                              const std::vector<std::size_t>& todo, std::size_t skipped,
                              const sweep_options& options, const rank_schedule& schedule,
                              int ranks) {
    const auto started = clock_type::now();
    ranks_sweep_result result;
    result.runs_per_rank.assign(std::size_t(ranks), 0);
    sweep_summary& summary = result.summary;
    summary.runs = e.size();
    summary.skipped = skipped;
    summary.jobs = schedule.jobs;
    std::exception_ptr write_failure;
    std::size_t next = 0, finished = 0;
    int active = ranks - 1;
    auto stopping = [&] { return (options.stop && options.stop->load()) || write_failure; };
    auto write = [&](const sweep_record& r, int from) {
        const auto write_start = clock_type::now();
        try {
            file.write(r);
        } catch (...) {
            if (!write_failure) write_failure = std::current_exception();
        }
        result.writing_seconds += seconds_since(write_start);
        ++result.runs_per_rank[std::size_t(from)];
        summary.count(r);
        detail::report_progress(options, ++finished, todo.size(), started);
    };
    rank_runs own(e, schedule, options.stop);
    auto idle = std::chrono::microseconds(20);
    while (active > 0 || !own.idle()) {
        while (own.has_free_slot() && !stopping() && next < todo.size())
            own.start(todo[next++]);
        bool busy = false;
        for (const sweep_record& r : own.take(std::chrono::microseconds(0))) {
            write(r, 0);
            busy = true;
        }
        MPI_Status status;
        int arrived = 0;
        if (active > 0) MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
        if (arrived) {
            busy = true;
            const int from = status.MPI_SOURCE;
            if (status.MPI_TAG == request) {
                int nothing = 0;
                MPI_Recv(&nothing, 0, MPI_INT, from, request, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                long long index = -1;
                if (!stopping() && next < todo.size()) index = static_cast<long long>(todo[next++]);
                MPI_Send(&index, 1, MPI_LONG_LONG, from, assign, MPI_COMM_WORLD);
            } else if (status.MPI_TAG == record) {
                const auto receive_start = clock_type::now();
                const sweep_record r = decode(receive_bytes(from, record));
                result.receiving_seconds += seconds_since(receive_start);
                write(r, from);
            } else {
                int nothing = 0;
                MPI_Recv(&nothing, 0, MPI_INT, from, status.MPI_TAG, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                --active;
            }
        }
        if (busy) {
            idle = std::chrono::microseconds(20);
            continue;
        }
        // Nothing arrived: wait gently (back to MPI_Iprobe within a millisecond), woken at once
        // by a run of rank 0's own that finishes, so that polling takes no core from the runs.
        const auto wait_start = clock_type::now();
        for (const sweep_record& r : own.take(idle))
            write(r, 0);
        if (own.idle()) std::this_thread::sleep_for(idle);
        idle = std::min(idle * 2, std::chrono::microseconds(1000));
        result.idle_seconds += seconds_since(wait_start);
    }
    if (write_failure) {
        // The file says it failed, and why, before the job ends (sweep_over_ranks aborts it).
        try {
            std::rethrow_exception(write_failure);
        } catch (const std::exception& error) {
            summary.wall_seconds = seconds_since(started);
            file.finish_failed(error.what(), summary.failed);
        } catch (...) {
        }
        std::rethrow_exception(write_failure);
    }
    result.stopped = options.stop && options.stop->load();
    summary.wall_seconds = seconds_since(started);
    const bool incomplete = result.stopped || summary.interrupted > 0 ||
                            summary.complete + summary.skipped + summary.failed < summary.runs;
    const auto write_start = clock_type::now();
    try {
        file.finish(incomplete       ? "interrupted"
                    : summary.failed ? "failed"
                                     : "complete",
                    summary.failed);
    } catch (const std::exception& error) {
        file.finish_failed(error.what(), summary.failed);
        throw;
    }
    result.writing_seconds += seconds_since(write_start);
    return result;
}

// A rank other than 0: runs what rank 0 assigns (rank_runs) and sends each record back from
// the main thread. It keeps one index in reserve, asked for while its runs compute, so that a
// free slot starts its next run at once instead of after a round trip to rank 0 (which also
// computes, and answers between its own runs' polls); records go out with MPI_Isend. Blocking
// MPI calls spin: waiting this way leaves the rank's cores to its runs.
void work(const experiment& e, const sweep_options& options, const rank_schedule& schedule) {
    rank_runs runs(e, schedule, options.stop);
    auto stopping = [&] { return options.stop && options.stop->load(); };
    bool more = true;                // rank 0 may have runs for this rank
    std::deque<std::size_t> reserve; // assigned, not started
    MPI_Request asking = MPI_REQUEST_NULL;
    long long assigned = -1;
    struct outgoing {
        std::vector<char> bytes;
        MPI_Request request = MPI_REQUEST_NULL;
    };
    std::deque<outgoing> sending; // records on their way to rank 0, oldest first
    auto send_record = [&](const sweep_record& r) {
        outgoing& out = sending.emplace_back(outgoing{encode(r), MPI_REQUEST_NULL});
        MPI_Isend(out.bytes.data(), static_cast<int>(out.bytes.size()), MPI_BYTE, 0, record,
                  MPI_COMM_WORLD, &out.request);
    };
    auto idle = std::chrono::microseconds(20);
    for (;;) {
        bool busy = false;
        while (runs.has_free_slot() && !reserve.empty() && !stopping()) {
            runs.start(reserve.front());
            reserve.pop_front();
            busy = true;
        }
        if (asking == MPI_REQUEST_NULL && more && reserve.empty() && !stopping()) {
            int nothing = 0;
            MPI_Send(&nothing, 0, MPI_INT, 0, request, MPI_COMM_WORLD);
            MPI_Irecv(&assigned, 1, MPI_LONG_LONG, 0, assign, MPI_COMM_WORLD, &asking);
        }
        if (asking != MPI_REQUEST_NULL) {
            int done = 0;
            MPI_Test(&asking, &done, MPI_STATUS_IGNORE);
            if (done) {
                if (assigned < 0)
                    more = false;
                else
                    reserve.push_back(static_cast<std::size_t>(assigned));
                busy = true;
            }
        }
        for (const sweep_record& r : runs.take(std::chrono::microseconds(0))) {
            send_record(r);
            busy = true;
        }
        while (!sending.empty()) {
            int done = 0;
            MPI_Test(&sending.front().request, &done, MPI_STATUS_IGNORE);
            if (!done) break;
            sending.pop_front();
        }
        // Stopped, or nothing more: an index in reserve is not started (a resume runs it).
        const bool finished =
            (stopping() || (!more && reserve.empty())) && asking == MPI_REQUEST_NULL && runs.idle();
        if (finished && sending.empty()) break;
        if (busy) {
            idle = std::chrono::microseconds(20);
            continue;
        }
        // Woken at once by a run that finishes; otherwise back to MPI_Test within a
        // millisecond, which moves the messages in flight.
        if (runs.idle())
            std::this_thread::sleep_for(idle);
        else
            for (const sweep_record& r : runs.take(idle))
                send_record(r);
        idle = std::min(idle * 2, std::chrono::microseconds(1000));
    }
    int nothing = 0;
    MPI_Send(&nothing, 0, MPI_INT, 0, retired, MPI_COMM_WORLD);
}

} // namespace

rank_schedule schedule_on_rank(const parallel_context& context, const experiment& e, int jobs) {
    rank_schedule schedule;
    schedule.jobs = detail::choose_jobs(e, jobs);
    // The one-process choice puts small runs side by side on every core this process may use;
    // the ranks of a node share its cores instead.
    if (jobs == 0 && schedule.jobs > 1)
        schedule.jobs = std::min(schedule.jobs, context.cores_per_rank());
    schedule.threads = schedule.jobs > 1 ? 1 : context.threads_per_run();
    return schedule;
}

ranks_sweep_result sweep_over_ranks(const parallel_context& context,
                                    const std::function<ranks_sweep_job()>& prepare,
                                    const sweep_options& options) {
    // Rank 0 prepares everything that can fail on bad input before any rank starts work.
    ranks_sweep_job job;
    std::optional<sweep_file> file;
    std::vector<std::size_t> todo;
    std::size_t skipped = 0, distrusted = 0;
    agree_on_root_step(context, [&] {
        job = prepare();
        if (!job.plan_only) {
            job.e.check_input_files();
            if (job.resume) {
                detail::check_recorded_experiment(job.path, job.e);
            } else {
                check_output_path(job.path, options.overwrite);
                detail::warn_configuration(job.e, options); // once, as in one process
                // The memory check of one process, for each worker (nodes alike).
                const sweep_plan plan = plan_sweep(job.e, options.jobs);
                const double available =
                    double(sysconf(_SC_AVPHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
                if (available > 0 && plan.bytes_in_use > available)
                    throw input_error("the sweep needs about " +
                                      std::to_string(plan.bytes_in_use / 1e9) + " GB with " +
                                      std::to_string(plan.jobs) +
                                      " runs side by side per rank, more than the memory "
                                      "available; pass --jobs 1");
            }
        }
    });
    int plan_only = job.plan_only ? 1 : 0;
    MPI_Bcast(&plan_only, 1, MPI_INT, 0, MPI_COMM_WORLD);
    ranks_sweep_result result;

    // The workers rebuild the experiment from rank 0's text: they need no file of their own.
    std::string text = broadcast(job.e.text), source = broadcast(job.e.source);
    std::uint64_t count = job.e.overrides.size();
    MPI_Bcast(&count, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    std::vector<std::string> overrides(count);
    for (std::size_t i = 0; i < count; ++i)
        overrides[i] = broadcast(context.root() ? job.e.overrides[i] : std::string());
    if (!context.root()) job.e = experiment::parse(text, source, overrides);

    // The workers read the input files themselves, in their own working directories: every
    // rank must read the same ones (by content) before rank 0 creates or opens the file.
    agree_on_input_files(context, job.e);
    // Every rank refuses a bad --jobs alike (the ranks' command lines agree), before any file.
    const rank_schedule schedule = schedule_on_rank(context, job.e, options.jobs);
    // A dry run refuses what the run would (an input missing on a worker), then ends.
    if (plan_only) return result;

    agree_on_root_step(context, [&] {
        const sweep_layout layout = detail::layout_of(job.e);
        if (job.resume) {
            file = sweep_file::open(job.path, layout);
            const auto trusted = file->trusted_runs(distrusted);
            for (std::size_t i = 0; i < trusted.size(); ++i) {
                if (trusted[i])
                    ++skipped;
                else
                    todo.push_back(i);
            }
        } else {
            file = sweep_file::create(job.path, detail::provenance_of(job.e), layout,
                                      options.overwrite);
            todo.resize(job.e.size());
            std::iota(todo.begin(), todo.end(), 0);
        }
    });

    if (context.root()) {
        try {
            result = coordinate(job.e, *file, todo, skipped, options, schedule, context.size());
            result.summary.distrusted = distrusted;
        } catch (const std::exception& error) {
            // The workers are past the point of agreeing on an outcome: end the job loudly.
            std::fprintf(stderr, "nadyn: %s\n", error.what());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        work(job.e, options, schedule);
    }
    // Every rank learns rank 0's account (the exit status follows from it).
    unsigned long long counts[6] = {result.summary.runs,     result.summary.skipped,
                                    result.summary.complete, result.summary.interrupted,
                                    result.summary.failed,   result.stopped ? 1ULL : 0ULL};
    MPI_Bcast(counts, 6, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    result.summary.runs = counts[0];
    result.summary.skipped = counts[1];
    result.summary.complete = counts[2];
    result.summary.interrupted = counts[3];
    result.summary.failed = counts[4];
    result.stopped = counts[5] != 0;
    return result;
}

} // namespace nadyn
