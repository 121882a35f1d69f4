# The fabric section of the inventory script (sparktui/core/inventory/script.py), in POSIX sh: the function
# fabric_part, over $ib (/sys/class/infiniband) and $sysnet (/sys/class/net), with `have` from the script.
# It prints one tab-separated line per fact, read with the shell's own `read` (no process per file: a ConnectX
# port has 256 GID slots): `net DEV NETDEV` (the device's network devices), `port DEV N FILE VALUE` (state,
# phys_state, link_layer, rate), `gid DEV N INDEX GID TYPE NETDEV` for each GID that is not empty (an empty
# slot's type and netdev cannot even be read), `mtu NETDEV MTU` for each network device named; then
# `ibv_devinfo` where it is installed (the active MTU of InfiniBand ports is in no sysfs file).
fabric_part() {
nets=
if [ -d "$ib" ]; then
  for d in "$ib"/*; do
    [ -d "$d" ] || continue
    dev=${d##*/}
    for n in "$d"/device/net/*; do
      [ -e "$n" ] || continue
      printf 'net\t%s\t%s\n' "$dev" "${n##*/}"; nets="$nets ${n##*/}"
    done
    for p in "$d"/ports/*; do
      [ -d "$p" ] || continue
      port=${p##*/}
      for f in state phys_state link_layer rate; do
        v=; read -r v 2>/dev/null <"$p/$f"
        printf 'port\t%s\t%s\t%s\t%s\n' "$dev" "$port" "$f" "$v"
      done
      for g in "$p"/gids/*; do
        [ -f "$g" ] || continue
        i=${g##*/}; v=
        read -r v 2>/dev/null <"$g"
        case $v in ''|0000:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
        t=; n=
        read -r t 2>/dev/null <"$p/gid_attrs/types/$i"
        read -r n 2>/dev/null <"$p/gid_attrs/ndevs/$i"
        printf 'gid\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dev" "$port" "$i" "$v" "$t" "$n"
        [ -n "$n" ] && nets="$nets $n"
      done
    done
  done
fi
for n in $(printf '%s\n' $nets | sort -u); do
  v=; read -r v 2>/dev/null <"$sysnet/$n/mtu"; printf 'mtu\t%s\t%s\n' "$n" "$v"
done
if [ -d "$ib" ] && have ibv_devinfo; then echo '# ibv_devinfo'; ibv_devinfo 2>&1; fi
true
}
