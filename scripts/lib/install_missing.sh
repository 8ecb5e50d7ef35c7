# Sourced by the setup scripts: install_missing PACKAGE... installs (apt-get) those of the
# Debian packages that are not installed yet, with sudo when not root.

# What building nadyn (MPI-aware, with Open MPI), its tests, the Python package (python/) and
# its tests need (setup.sh, test-sanitize.sh, benchmark.sh).
nadyn_packages=(build-essential cmake git libboost-dev libeigen3-dev libhdf5-dev hdf5-tools
                doctest-dev libcli11-dev libtomlplusplus-dev libglpk-dev libfftw3-dev libsharp-dev python3-numpy python3-scipy python3-h5py
                python3-matplotlib python3-xarray python3-h5netcdf python3-pytest python3-tqdm
                python3-nbclient python3-nbformat python3-ipykernel python3-venv ffmpeg pybind11-dev
                python3-dev libopenmpi-dev openmpi-bin)

install_missing() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo "installing: ${missing[*]}" >&2
        local sudo=""
        [[ $(id -u) -ne 0 ]] && sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}
