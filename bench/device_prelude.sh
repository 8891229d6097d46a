# Sourced at the start of a device-tool command: makes the carried slim build available as
# build/ at the path the CTest files were configured with, and sends outputs to /tmp/o.
[ -e /work/main ] || { mkdir -p /work && ln -s "$(pwd)" /work/main; }
cd /work/main || exit 1
# The build travels as a directory, or compressed (scripts/slim_build.sh --xz) when it is too big.
[ -f .device_carry/build.tar.xz ] && tar xJf .device_carry/build.tar.xz -C .device_carry
[ -d .device_carry/build ] && { rm -rf build; ln -sfn .device_carry/build build; }
export RIDGE_DEVICE_OUT=$OUT OUT=/tmp/o
mkdir -p "$OUT"
pack() { (cd /tmp/o && find . -type f -size -12M | tar czf "$RIDGE_DEVICE_OUT/$1.tgz" -T -); }
