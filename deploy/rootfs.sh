#!/bin/sh
# Assembles a minimal root filesystem for the tokenvault binary, for `FROM scratch` images
# (deploy/Containerfile.rootfs) or a chroot:
#
#   /usr/local/bin/tokenvault           the release binary
#   <each shared library `ldd` names>    at the path ldd gives, plus the ELF interpreter
#   /etc/passwd, /etc/group              root and the service user tokenvault (UID/GID 65532)
#   /etc/nsswitch.conf, /etc/hosts       name lookups: files, then DNS (glibc ≥ 2.34 has both
#                                        built into libc.so.6: no libnss_* to copy)
#   /etc/ssl/certs/ca-certificates.crt   CA bundle for outbound HTTPS (proxies, code's fetch)
#   /tmp (1777), /data (0700, the service user's), /proc, /dev, /run   mount points
#
# and the same tree as <outdir>.tar (owners and modes as above whoever runs this), which
# deploy/Containerfile.rootfs ADDs: the build context is the folder holding both.
#
# Usage: deploy/rootfs.sh <binary> <outdir>
#   CA_BUNDLE=<file>   CA bundle to copy (default /etc/ssl/certs/ca-certificates.crt, from
#                      Debian's ca-certificates package)
#   TV_UID / TV_GID    the service user's ids (default 65532, as in the Dockerfile)
#
# <outdir> must be missing, empty, or a tree this script made before (it is then replaced).
# Run it as root for a chroot (the tree's /data gets its owner); the tar is right either way.
set -eu

die() { echo "rootfs.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: rootfs.sh <binary> <outdir>"
binary=$1
out=$2
ca_bundle=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
uid=${TV_UID:-65532}
gid=${TV_GID:-65532}
marker=.tokenvault-rootfs

if [ ! -f "$binary" ] || [ ! -x "$binary" ]; then die "$binary is not an executable file"; fi
[ -f "$ca_bundle" ] || die "no CA bundle at $ca_bundle (apt-get install ca-certificates, or set CA_BUNDLE)"
command -v ldd >/dev/null || die "ldd is missing (libc-bin)"

if [ -e "$out" ]; then
    if [ -f "$out/$marker" ]; then
        # Our own earlier tree; nothing may still be mounted inside it.
        if grep -q " $(cd "$out" && pwd -P)/" /proc/self/mounts 2>/dev/null; then
            die "something is mounted under $out: unmount it first"
        fi
        rm -rf --one-file-system "$out"
    elif [ -n "$(ls -A "$out")" ]; then
        die "$out exists, is not empty and was not made by this script"
    fi
fi
mkdir -p "$out"
: > "$out/$marker"

# The binary.
install -D -m 0755 "$binary" "$out/usr/local/bin/tokenvault"

# Its shared libraries and the interpreter, each at the path the dynamic loader resolves.
libs=$(ldd "$binary" 2>&1) || {
    case $libs in
    *"not a dynamic executable"* | *"statically linked"*) libs= ;;
    *) die "ldd $binary failed: $libs" ;;
    esac
}
if echo "$libs" | grep -q "not found"; then
    die "missing libraries: $(echo "$libs" | grep 'not found' | tr -s '\t ' ' ')"
fi
echo "$libs" | awk '
    $2 == "=>" && $3 ~ /^\// { print $3; next }   # libfoo.so.1 => /path (0x…)
    $1 ~ /^\// { print $1 }                        # /lib64/ld-linux-x86-64.so.2 (0x…)
' | sort -u | while read -r lib; do
    install -D -m 0755 "$lib" "$out$lib" # install(1) follows symlinks: the real file lands here
    echo "library: $lib" >&2
done

# Users: the service user owns /data; its shell does not exist on purpose.
mkdir -p "$out/etc"
cat > "$out/etc/passwd" <<PASSWD
root:x:0:0:root:/root:/sbin/nologin
tokenvault:x:$uid:$gid:tokenvault:/data:/sbin/nologin
PASSWD
cat > "$out/etc/group" <<GROUP
root:x:0:
tokenvault:x:$gid:
GROUP
chmod 0644 "$out/etc/passwd" "$out/etc/group"
printf 'hosts: files dns\n' > "$out/etc/nsswitch.conf"
# Container runtimes mount their own /etc/hosts and /etc/resolv.conf over these.
printf '127.0.0.1 localhost\n::1 localhost\n' > "$out/etc/hosts"
: > "$out/etc/resolv.conf"

# CA certificates (rustls-platform-verifier reads the system bundle through openssl-probe).
install -D -m 0644 "$ca_bundle" "$out/etc/ssl/certs/ca-certificates.crt"

# Mount points and writable places.
mkdir -p "$out/proc" "$out/dev" "$out/run" "$out/tmp" "$out/data"
chmod 0555 "$out/proc"
chmod 0755 "$out/dev" "$out/run"
chmod 1777 "$out/tmp"
chmod 0700 "$out/data"
if [ "$(id -u)" = 0 ]; then
    chown "$uid:$gid" "$out/data"
else
    echo "rootfs.sh: not root: $out/data is owned by $(id -u), not $uid (the tar has it right)" >&2
fi

# The same tree as a tar for `ADD rootfs.tar /` (deploy/Containerfile.rootfs): a build's COPY
# makes every file root's and cannot give /data its owner, ADD of a tar keeps owners and modes.
# Made now, before anything (a chroot test) writes into the tree's /data.
tar --numeric-owner --sort=name -C "$out" --owner=0 --group=0 \
    --exclude=./data --exclude="./$marker" -cf "$out.tar" .
tar --numeric-owner -C "$out" --owner="$uid" --group="$gid" --no-recursion -rf "$out.tar" ./data
echo "rootfs.sh: $(du -sh "$out" | cut -f1) in $out, and $out.tar" >&2
