#!/usr/bin/env bash
# bluetoothctl_peer.sh noke|bleproof ADAPTER_ADDRESS
#
# BlueZ's own C GATT server (bluetoothctl, menu gatt) scripted through its
# stdin. bluetoothctl has no rules: a WriteValue stores the value and emits
# PropertiesChanged("Value"), so every write to an echo characteristic comes
# back as a notification/indication with the written bytes. That is the C
# baseline for the round trip; it is not the Noke/BLEProof logic.
#   noke:     service 1bc50001, rx 1bc50002 (write, notify: echo), session
#             1bc50004 (read, 20 bytes); advertises the service + NOKE name.
#   bleproof: service 18AA, info 2BB0 (read "iPhone ABC"), config 2BB2
#             (write, indicate: echo); advertises 18AA + "BLEProof".
# "write-without-response" is left out on purpose: with it bluetoothctl
# exposes WriteAcquired and BlueZ 5.66 then routes every write to a socket
# that bluetoothctl only prints (no echo).
set -euo pipefail
profile="$1"; addr="$2"
# bluetoothctl's maximum value length is the initial value's length: the
# 140-byte BLEProof write needs a long initial value.
zeros200="$(printf '0x00 %.0s' $(seq 200))"
hex20="0x00 0x00 0x0b 0x0b 0x04 0x0b 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00 0x00"
if [ "$profile" = noke ]; then
  name="NOKE3E_$(echo "$addr" | tr -d : | tr a-f A-F)"
  script="select $addr
menu gatt
register-service 1bc50001-0200-d29e-e511-446c609db825
yes
register-characteristic 1bc50002-0200-d29e-e511-446c609db825 write,notify
$hex20
register-characteristic 1bc50004-0200-d29e-e511-446c609db825 read
$hex20
register-application
back
menu advertise
uuids 1bc50001-0200-d29e-e511-446c609db825
manufacturer 0xffff 0x40 0x02 0x0a 0x00 0x00
name $name
back
system-alias $name
advertise peripheral"
else
  script="select $addr
menu gatt
register-service 000018aa-0000-1000-8000-00805f9b34fb
yes
register-characteristic 00002bb0-0000-1000-8000-00805f9b34fb read
0x69 0x50 0x68 0x6f 0x6e 0x65 0x20 0x41 0x42 0x43
register-characteristic 00002bb2-0000-1000-8000-00805f9b34fb write,indicate
$zeros200
register-application
back
menu advertise
uuids 0x18aa
name BLEProof
back
system-alias BLEProof
advertise peripheral"
fi
# bluetoothctl reads commands from the pipe; the sleep keeps stdin open (it
# quits on EOF). One command per ~20 ms so that the value prompts of
# register-* get their own lines.
exec bluetoothctl < <(while IFS= read -r line; do printf '%s\n' "$line"; sleep 0.02; done <<<"$script"; exec sleep infinity)
