#!/usr/bin/env bash
# Pack what an H200 call needs for both FlashInfer versions and cuDNN's Python frontend into .whlx/
# (git ignores it), small enough to travel with the working tree in one call (64 MiB in all):
# each flashinfer wheel unpacked and xz'd as a site (flashinfer-VERSION-site.tar.xz: 12 and 18.5 MB where
# the wheels are 28 and 53), nvidia-cudnn-frontend likewise (cudnn-frontend-site.tar.xz: 5.9 MB where the
# wheel is 11.6), apache-tvm-ffi as its wheel (without the frontend, flashinfer.cudnn has CUDNN_AVAILABLE
# False: no cuDNN backend, and 0.7.4's cuDNN API takes its cubin path).
#
#   bash scripts/pack_flashinfer_sites.sh FLASHINFER_WHEEL... [--tvm-ffi WHEEL] [--cudnn-frontend WHEEL]
#
# The wheels come from ../shared/tools/flashinfer-wheels VERSION and `pip download --no-deps
# nvidia-cudnn-frontend==1.32.0` (docs/h200-runner.md). On the runner, scripts/h200_lib.sh install_sites
# unpacks .whlx/ (or the older .whl/ and .whl074x/) into site-common and site-VERSION.
set -euo pipefail
top=$(git rev-parse --show-toplevel)
out=$top/.whlx
exclude=$(git -C "$top" rev-parse --git-path info/exclude)
grep -qxF "/.whlx/" "$exclude" 2>/dev/null || printf '/.whlx/\n' >> "$exclude"
mkdir -p "$out"
wheels=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tvm-ffi) cp "$2" "$out/"; shift 2 ;;
    --cudnn-frontend) fe=$2; shift 2 ;;
    *.whl) wheels+=("$1"); shift ;;
    *) echo "pack_flashinfer_sites: error: $1 is not a wheel; pass flashinfer_python-VERSION-*.whl files" >&2; exit 2 ;;
  esac
done
[ ${#wheels[@]} -gt 0 ] || { echo "pack_flashinfer_sites: error: no flashinfer wheel given" >&2; exit 2; }
as_site() {  # as_site WHEEL NAME: the wheel unpacked, xz'd into $out/NAME-site.tar.xz
  local tmp; tmp=$(mktemp -d)
  unzip -q "$1" -d "$tmp"
  tar -C "$tmp" -cf - . | xz -9 -T0 > "$out/$2-site.tar.xz.part"
  mv "$out/$2-site.tar.xz.part" "$out/$2-site.tar.xz"
  rm -rf "$tmp"
}
for w in "${wheels[@]}"; do
  as_site "$w" "flashinfer-$(basename "$w" | cut -d- -f2)"
done
[ -z "${fe:-}" ] || as_site "$fe" cudnn-frontend
du -ch "$out"/* | tail -n 1
