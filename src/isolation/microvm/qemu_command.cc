#include "isolation/microvm/qemu_command.h"

#include <cctype>
#include <string>

namespace asb::isolation::microvm {

namespace {

// What every VM of ours shares.
std::vector<std::string> Base(const std::string& qemu, const std::string& accel) {
  return {
      qemu,
      // The smallest machine: virtio-mmio devices only, no PCI, no firmware tables to parse.
      "-M",
      "microvm",
      // TCG runs each vCPU on a thread of its own with thread=multi; tb-size bounds its
      // translated-code cache (kTcgCacheMib).
      "-accel",
      accel == "kvm" ? "kvm" : "tcg,thread=multi,tb-size=" + std::to_string(kTcgCacheMib),
      // The guest's CPU: the host's under KVM, everything TCG emulates under TCG. The default
      // (qemu64) lacks SSSE3, SSE4.2 and POPCNT, which Debian's builds of common Python
      // packages use: matplotlib's import died of SIGILL in the python template's VMs.
      "-cpu",
      accel == "kvm" ? "host" : "max",
      // Nothing we did not ask for: no default NIC, VGA, monitor or config file.
      "-nodefaults",
      "-no-user-config",
      "-display",
      "none",
      // QEMU's own seccomp filter: no exec, no setuid, no obsolete syscalls, no resource games.
      "-sandbox",
      "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
      // A guest reboot or panic ends the VM (panic=-1 below), so the host sees it end.
      "-no-reboot",
  };
}

std::string KernelArgs(const std::string& extra) {
  // tsc_early_khz: without it about 30% of TCG boots hang calibrating the TSC (measured,
  // docs/ARCHITECTURE.md); quiet: the console holds only what matters.
  // panic=-1 reboot=t: a panic resets at once by triple fault (microvm has no keyboard
  // controller to reboot through, and the kernel would try one method after another).
  return "console=ttyS0 quiet tsc_early_khz=2500000 panic=-1 reboot=t " + extra;
}

}  // namespace

std::vector<std::string> QemuCommand(const std::string& qemu, const VmConfig& vm) {
  std::vector<std::string> a = Base(qemu, vm.accel);
  const std::string tmp_kib = std::to_string(vm.tmp_bytes >> 10) + "k";
  // Unknown key=value kernel parameters reach the guest's init as its environment.
  std::string hostname;
  for (char c : vm.hostname) {  // a kernel command line word: no spaces or quotes
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') hostname += c;
  }
  if (hostname.empty()) hostname = "sandbox";
  const std::string net_args =
      vm.net_address.empty() ? ""
                             : " ASB_NET_ADDR=" + vm.net_address + " ASB_NET_GW=" + vm.net_gateway;
  const std::vector<std::string> rest = {
      "-name",
      vm.name,
      "-m",
      std::to_string(vm.memory_mib),
      "-smp",
      std::to_string(vm.vcpus),
      "-kernel",
      vm.kernel.vmlinuz,
      "-initrd",
      vm.initrd,
      "-append",
      KernelArgs("ASB_HOSTNAME=" + hostname + " ASB_TMP_SIZE=" + tmp_kib +
                 " ASB_PIDS_MAX=" + std::to_string(vm.pids_limit) +
                 (vm.work_memory_bytes > 0
                      ? " ASB_MEMORY_MAX=" + std::to_string(vm.work_memory_bytes)
                      : std::string()) +
                 net_args),
      // The serial console on a socket the server reads into a bounded buffer (a file would
      // grow as long as the guest writes; guest_console.h). Unread, QEMU drops what the guest
      // writes; read slowly, the guest's UART waits.
      "-chardev",
      "socket,id=con,path=" + vm.console_socket + ",server=on,wait=off",
      "-serial",
      "chardev:con",
      // The disks, found by the guest by serial, not probe order.
      "-drive",
      "id=root,file=" + vm.rootfs_image + ",format=raw,if=none,readonly=on",
      "-device",
      "virtio-blk-device,drive=root,serial=asbroot",
      "-drive",
      "id=ws,file=" + vm.workspace_image + ",format=raw,if=none",
      "-device",
      "virtio-blk-device,drive=ws,serial=asbws",
      // sandboxd's config (env, hostname), read once by the guest's init.
      "-drive",
      "id=cfg,file=" + vm.config_image + ",format=raw,if=none,readonly=on",
      "-device",
      "virtio-blk-device,drive=cfg,serial=asbcfg",
      // The sandbox protocol: a virtio-serial port named asb0 joined to a unix socket that
      // QEMU listens on and the host dials (no vhost-vsock on these machines).
      "-chardev",
      "socket,id=asb0,path=" + vm.socket + ",server=on,wait=off",
      "-device",
      "virtio-serial-device",
      "-device",
      "virtserialport,chardev=asb0,name=asb0",
  };
  a.insert(a.end(), rest.begin(), rest.end());
  if (!vm.net_address.empty()) {
    // The guest's network: a virtio-net device on the tap device the backend made in QEMU's
    // network namespace (no helper scripts, no vhost: QEMU has no right to either).
    const std::vector<std::string> net = {
        "-netdev",
        std::string("tap,id=net0,ifname=") + kNetTap + ",script=no,downscript=no",
        "-device",
        "virtio-net-device,netdev=net0,mac=" + vm.net_mac,
    };
    a.insert(a.end(), net.begin(), net.end());
  }
  return a;
}

std::vector<std::string> ProbeCommand(const std::string& qemu, const GuestKernel& k,
                                      const std::string& accel) {
  std::vector<std::string> a = Base(qemu, accel);
  const std::vector<std::string> rest = {
      "-m",      "128",         "-kernel", k.vmlinuz,
      "-initrd", k.initrd_base, "-append", KernelArgs("asb.probe=1")};
  a.insert(a.end(), rest.begin(), rest.end());
  return a;
}

}  // namespace asb::isolation::microvm
