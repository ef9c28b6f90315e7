# What every configuration of this flake shares, node or #minimal: boot,
# disks, SSH for NIO. `settings` comes from flake.nix.
#
# ASSUMPTION: the hosts were installed the way the NixOS manual does it:
# root file system labelled "nixos" (ext4), EFI system partition labelled
# "boot", systemd-boot. #minimal is one configuration for every host, so it
# cannot know a host's hardware; node configurations can: put a host's
# hardware-configuration.nix in hosts/<machine>.nix (see hosts/README.md).
settings:
{ lib, ... }:
{
  nixpkgs.hostPlatform = lib.mkDefault settings.system;

  boot.loader.systemd-boot.enable = lib.mkDefault true;
  boot.loader.efi.canTouchEfiVariables = lib.mkDefault true;
  # Storage drivers common on servers and VMs, so a host without its own
  # hardware file still finds its disk.
  boot.initrd.availableKernelModules = [ "ahci" "nvme" "sd_mod" "sr_mod" "usb_storage" "xhci_pci" "virtio_pci" "virtio_blk" "virtio_scsi" ];

  fileSystems."/" = {
    device = lib.mkDefault "/dev/disk/by-label/nixos";
    fsType = lib.mkDefault "ext4";
  };
  fileSystems."/boot" = {
    device = lib.mkDefault "/dev/disk/by-label/boot";
    fsType = lib.mkDefault "vfat";
    options = lib.mkDefault [ "fmask=0077" "dmask=0077" ];
  };

  # NIO reaches the host over SSH as the Machine's sshUser (root here) with
  # the Machine's key: every configuration must keep that working, or the
  # next apply (and #minimal) cannot reach the host.
  services.openssh.enable = true;
  services.openssh.settings.PermitRootLogin = lib.mkDefault "prohibit-password";
  services.openssh.settings.PasswordAuthentication = lib.mkDefault false;
  users.users.root.openssh.authorizedKeys.keys = settings.rootAuthorizedKeys;
  warnings = lib.optional (settings.rootAuthorizedKeys == [ ])
    "rootAuthorizedKeys is empty in flake.nix: list the public half of the SSH key NIO uses for these Machines, or NIO may lose access after this switch.";

  nix.settings.experimental-features = [ "nix-command" "flakes" ];
  system.stateVersion = settings.stateVersion;
}
