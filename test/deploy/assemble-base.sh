#!/bin/sh
# Assembles stand-ins for the image's two bases where no image registry is reachable (docs/deploy.md,
# "Appendix: building the image where no base image can be pulled"), with buildah:
#   localhost/debian:bookworm-slim   a debootstrap'd Debian bookworm (minbase), slimmed as Debian's
#                                    -slim images are (no docs, man pages, locales, apt lists)
#   localhost/node:20-bookworm-slim  that plus this machine's Node 20 under /usr/local, as the
#                                    official image has it: node, npm, corepack, Node's headers
# The debootstrap'd tree is cached in $RA_IMAGE_BASE_DIR (default /var/tmp/ra-image-base, outside the
# repository), and an image that already exists is kept: a second run takes a second.
# Needs root, buildah, debootstrap, Debian's package mirror and a Node 20 on PATH.
#   sh test/deploy/assemble-base.sh          # prints the two image names when done
set -eu
dir=${RA_IMAGE_BASE_DIR:-/var/tmp/ra-image-base}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian=localhost/debian:bookworm-slim
node=localhost/node:20-bookworm-slim
B=buildah

exists() { $B inspect --type image "$1" >/dev/null 2>&1; }

if ! exists "$debian"; then
  mkdir -p "$dir"
  if [ ! -f "$dir/rootfs.done" ]; then
    rm -rf "$dir/rootfs"
    debootstrap --variant=minbase bookworm "$dir/rootfs" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
      { tail -20 "$dir/debootstrap.log" >&2; exit 1; }
    # What debian:bookworm-slim leaves out (its dpkg path-excludes), and the downloaded lists.
    rm -rf "$dir"/rootfs/usr/share/doc/* "$dir"/rootfs/usr/share/man/* "$dir"/rootfs/usr/share/info/* \
      "$dir"/rootfs/usr/share/locale/* "$dir"/rootfs/var/cache/apt/* "$dir"/rootfs/var/lib/apt/lists/* \
      "$dir"/rootfs/var/log/*.log "$dir"/rootfs/var/cache/debconf/*-old
    touch "$dir/rootfs.done"
  fi
  ctr=$($B from scratch)
  $B copy "$ctr" "$dir/rootfs/" / >/dev/null
  $B config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$ctr"
  $B commit --rm --format docker "$ctr" "$debian" >/dev/null
fi

if ! exists "$node"; then
  nodebin=$(command -v node)
  case "$("$nodebin" --version)" in v20.*) ;; *) echo "assemble-base: $nodebin is not Node 20" >&2; exit 1 ;; esac
  npmdir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")   # …/lib/node_modules/npm
  headers=$(dirname "$nodebin")/../include/node
  [ -f "$headers/node_api.h" ] || headers=/usr/include/node
  ctr=$($B from "$debian")
  mnt=$($B mount "$ctr")
  mkdir -p "$mnt/usr/local/bin" "$mnt/usr/local/lib/node_modules" "$mnt/usr/local/include"
  cp "$nodebin" "$mnt/usr/local/bin/node"
  cp -a "$npmdir" "$mnt/usr/local/lib/node_modules/npm"
  [ -d "$(dirname "$npmdir")/corepack" ] && cp -a "$(dirname "$npmdir")/corepack" "$mnt/usr/local/lib/node_modules/"
  cp -a "$headers" "$mnt/usr/local/include/node"   # node-gyp compiles better-sqlite3 against these
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  # This machine's CA bundle, for the builds' npm: where a TLS-intercepting proxy stands between the
  # machine and the npm registry, Node's own CAs do not verify it and npm retries for many minutes.
  ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
  if [ -f "$ca" ]; then
    mkdir -p "$mnt/etc/ssl/certs" && cp "$ca" "$mnt/etc/ssl/certs/ca-certificates.crt"
    $B config --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt "$ctr"
  fi
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  $B umount "$ctr" >/dev/null
  $B config --cmd node "$ctr"
  $B commit --rm --format docker "$ctr" "$node" >/dev/null
fi
echo "$debian"
echo "$node"
