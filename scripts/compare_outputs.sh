#!/usr/bin/env bash
# Runs the same `nadyn simulate` configurations with two binaries and compares every dataset
# of their output files bitwise (dtype, shape and bytes; attributes, which hold timestamps
# and provenance, are not compared). For changes that must not move a bit of the results
# (refactorings of the kernel and the integrators): build the binary before the change, keep
# a copy, build after, then
#
#   bash scripts/compare_outputs.sh /tmp/nadyn-before build/bin/nadyn
#
# The configurations cover every path of the attention kernel (src/model/kernel/choose.hpp):
# small and large n, small and large d, one and four heads, double and float, the
# integrators and the layers; the input files (an init file with magnitudes, a weights file
# of four heads, layernorm's gain and bias); and one sweep (examples/beta_sweep.toml, every
# dataset but wall_time, the seconds each run took), and a sweep of optional observables.
# The interaction energy, `energy` in files before it was renamed `log_energy`, is compared
# under its new name (`--observe energy` asks both binaries for it). Exit status 0 when every
# file matches, 1 otherwise.
# NADYN_COMPARE_DIR=DIR keeps the files there (default: a temporary directory, removed).
set -euo pipefail
if [[ $# -ne 2 ]]; then
    echo "usage: $0 BINARY_BEFORE BINARY_AFTER" >&2
    exit 2
fi
before="$(realpath "$1")"
after="$(realpath "$2")"
python=/usr/bin/python3
if [[ -n "${NADYN_COMPARE_DIR:-}" ]]; then
    dir="$NADYN_COMPARE_DIR"
    mkdir -p "$dir"
else
    dir="$(mktemp -d)"
    trap 'rm -rf "$dir"' EXIT
fi

# name | flags (each run: --quiet --threads 2, the seed fixed by --seed 1, the default)
configs=(
    "peri_n64_d3|--scheme peri-ln --n 64 --d 3 --T 5"
    "pre_n300_d3_dopri5|--scheme pre-ln --n 300 --d 3 --T 3 --integrator dopri5"
    "post_n64_d16_h4|--scheme post-ln --n 64 --d 16 --heads 4 --weights gaussian --T 3"
    "ngpt_n300_d16_h4_euler|--scheme ngpt --n 300 --d 16 --heads 4 --weights gaussian --T 2 --integrator euler"
    "mix_n8_d2_causal|--scheme mix-ln --n 8 --d 2 --causal --T 5"
    "sqrt_n300_d64|--scheme sqrt-scaling --n 300 --d 64 --T 1"
    "post_n64_d8_layers|--scheme post-ln --n 64 --d 8 --integrator layers --dt 0.1 --T 5"
    "sqrt_n64_d8_layers|--scheme sqrt-scaling --n 64 --d 8 --integrator layers --dt 0.1 --T 5"
    "ngpt_add_n64_d8_layers|--scheme ngpt --ngpt-layer add --n 64 --d 8 --integrator layers --dt 0.1 --T 5"
    "nonorm_n64_d64_layers|--scheme no-norm --n 64 --d 64 --weights gaussian --integrator layers --dt 1 --T 12"
    "peri_n300_d16_float|--scheme peri-ln --n 300 --d 16 --precision float --T 2"
    "pre_n300_d64_h4_float|--scheme pre-ln --n 300 --d 64 --heads 4 --weights gaussian --precision float --T 1"
    "post_n300_d64_float_causal|--scheme post-ln --n 300 --d 64 --precision float --causal --T 1"
    "peri_n64_d8_h4_noise|--scheme peri-ln --n 64 --d 8 --heads 4 --weights symmetric --qkv-norm --norm-noise 0.1 --T 2"
    "pre_n128_d16_h4_unnorm|--scheme pre-ln --n 128 --d 16 --heads 4 --weights gaussian --attention unnormalized --beta 0.5 --T 2"
    "peri_n200_d3_layernorm|--scheme peri-ln --n 200 --d 3 --norm layernorm --T 3"
    "post_n64_d64_sym_float|--scheme post-ln --n 64 --d 64 --weights symmetric --heads 4 --precision float --T 2"
    "pre_n24_d6_init_file|--scheme pre-ln --n 24 --d 6 --init file:@INPUTS@ --T 2"
    "peri_n24_d6_h4_weights_file|--scheme peri-ln --n 24 --d 6 --heads 4 --weights file:@INPUTS@ --value qk --T 2"
    "post_n24_d6_ln_params|--scheme post-ln --n 24 --d 6 --norm layernorm --ln-params file:@INPUTS@ --T 2"
    "pre_n40_d4_h2_observe|--scheme pre-ln --n 40 --d 4 --heads 2 --weights gaussian --T 2 --observe unselectable,pair_change,angle,energy,effective_rank,pair_density,modes --mode-count 5"
    "nonorm_n30_d3_observables|--scheme no-norm --n 30 --d 3 --T 2 --observables gap,clusters,step_error --observe angle,modes"
    "post_n64_d16_h8_shared_values_layers|--scheme post-ln --n 64 --d 16 --heads 8 --weights interaction-product --value identity --integrator layers --dt 0.1 --T 5"
    "pre_n64_d16_h4_shared_values_float|--scheme pre-ln --n 64 --d 16 --heads 4 --weights gaussian --value minus-identity --precision float --T 2"
    "pre_n48_d5_h3_shared_values_causal|--scheme pre-ln --n 48 --d 5 --heads 3 --weights gaussian --value identity --causal --T 2"
    "post_n300_d16_h8_shared_values_general|--scheme post-ln --n 300 --d 16 --heads 8 --weights interaction-product --value identity --integrator layers --dt 0.1 --T 2"
    "pre_n200_d16_h4_shared_values_general_float|--scheme pre-ln --n 200 --d 16 --heads 4 --weights gaussian --value minus-identity --precision float --T 1"
    "pre_n160_d8_h3_shared_values_unnormalized|--scheme pre-ln --n 160 --d 8 --heads 3 --weights gaussian --value identity --attention unnormalized --T 1"
)

# The input files the configurations name (@INPUTS@): seeded numbers, written once.
"$python" - "$dir/inputs.h5" <<'EOF'
import sys
import h5py
import numpy as np

rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], "w") as f:
    f["theta0"] = rng.standard_normal((24, 6))
    f["r0"] = rng.uniform(0.5, 2.0, 24)
    f["Q"] = rng.standard_normal((4, 6, 6)) / np.sqrt(6)
    f["K"] = rng.standard_normal((4, 6, 6)) / np.sqrt(6)
    f["gain"] = rng.uniform(0.5, 1.5, 6)
    f["bias"] = 0.1 * rng.standard_normal(6)
EOF

compare() {
    "$python" - "$1" "$2" <<'EOF'
import sys
import h5py
import numpy as np

def datasets(path):
    found = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                data = np.asarray(obj[()])
                # Variable-length strings come back as Python objects: compare their text.
                raw = repr(data.tolist()).encode() if data.dtype.kind == "O" else data.tobytes()
                if name == "parameters":  # a sweep's run records "key=value; ..."
                    raw = [dict(item.split("=", 1) for item in record.decode().split("; "))
                           for record in data.ravel().tolist()]
                if name == "parameters":
                    for record in raw:
                        if "observe" in record:  # the name `energy` had before the rename
                            record["observe"] = ",".join(
                                "log_energy" if o == "energy" else o
                                for o in record["observe"].split(","))
                # energy was renamed log_energy: the same dataset under its new name.
                name = {"energy": "log_energy"}.get(name, name)
                if name.startswith("observables/energy/"):
                    name = "observables/log_energy/" + name[len("observables/energy/"):]
                found[name] = (obj.dtype, obj.shape, raw)
        f.visititems(visit)
    return found

a, b = datasets(sys.argv[1]), datasets(sys.argv[2])
problems = []
# A newer binary may record what an older one did not (new observables, tables): listed, not
# a difference; a dataset the newer one lost is one.
new = sorted(set(b) - set(a))
if new:
    print(f"    datasets only the second binary writes: {', '.join(new)}")
for name in sorted(set(a) | set(b)):
    if name not in b:
        problems.append(f"{name}: only in before")
    elif name not in a:
        continue
    elif a[name][:2] != b[name][:2]:
        problems.append(f"{name}: dtype/shape {a[name][:2]} vs {b[name][:2]}")
    elif name == "parameters":
        # The records name the commit each binary was built from, and a newer binary records
        # the parameters it added: compare the values both record, list the new names.
        for before, after in zip(a[name][2], b[name][2]):
            shared = (set(before) & set(after)) - {"git_commit"}
            if any(before[key] != after[key] for key in shared):
                problems.append(f"{name}: values differ")
                break
        added = sorted(set(b[name][2][0]) - set(a[name][2][0])) if b[name][2] else []
        if added:
            print(f"    parameters only the second binary records: {', '.join(added)}")
    elif a[name][2] != b[name][2]:
        problems.append(f"{name}: values differ")
for p in problems:
    print("   ", p)
print(f"    {len(a)} datasets, {len(problems)} differ")
sys.exit(1 if problems else 0)
EOF
}

failed=0
for entry in "${configs[@]}"; do
    name="${entry%%|*}"
    flags="${entry#*|}"
    flags="${flags//@INPUTS@/$dir/inputs.h5}"
    echo "$name: nadyn simulate $flags"
    # shellcheck disable=SC2086 # the flags are words
    "$before" simulate $flags --quiet --threads 2 --out "$dir/$name.before.h5" --force
    # shellcheck disable=SC2086
    "$after" simulate $flags --quiet --threads 2 --out "$dir/$name.after.h5" --force
    if compare "$dir/$name.before.h5" "$dir/$name.after.h5"; then
        echo "    bitwise equal"
    else
        echo "    DIFFERENT"
        failed=1
    fi
done
echo "sweep: nadyn sweep examples/beta_sweep.toml"
here="$(dirname "$(realpath "$0")")/.."
"$before" sweep "$here/examples/beta_sweep.toml" --quiet --out "$dir/sweep.before.h5" --force
"$after" sweep "$here/examples/beta_sweep.toml" --quiet --out "$dir/sweep.after.h5" --force
for side in before after; do # the seconds each run took differ from run to run
    "$python" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); del f['wall_time']" \
        "$dir/sweep.$side.h5"
done
if compare "$dir/sweep.before.h5" "$dir/sweep.after.h5"; then
    echo "    bitwise equal"
else
    echo "    DIFFERENT"
    failed=1
fi
echo "sweep: optional observables, two mode counts"
cat >"$dir/observe.toml" <<'EOF'
[run]
scheme = "pre-ln"
n = 16
d = 3
T = 1
dt = 0.1
observe = "unselectable,angle,energy,modes"
[sweep]
mode_count = [2, 4]
seed = [1, 2]
EOF
"$before" sweep "$dir/observe.toml" --quiet --out "$dir/observe.before.h5" --force
"$after" sweep "$dir/observe.toml" --quiet --out "$dir/observe.after.h5" --force
for side in before after; do
    "$python" -c "import h5py, sys; f = h5py.File(sys.argv[1], 'a'); del f['wall_time']" \
        "$dir/observe.$side.h5"
done
if compare "$dir/observe.before.h5" "$dir/observe.after.h5"; then
    echo "    bitwise equal"
else
    echo "    DIFFERENT"
    failed=1
fi
if [[ $failed -eq 0 ]]; then
    echo "all ${#configs[@]} configurations and the sweeps bitwise equal"
else
    echo "some configurations differ" >&2
fi
exit $failed
