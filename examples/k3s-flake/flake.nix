{
  description = "Example for NICO: k3s on NixOS, one configuration per node, plus #minimal";

  # Pin a release and commit flake.lock (nix flake lock), so every node
  # builds the same k3s.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { self, nixpkgs }:
    let
      # Edit for your hosts; README.md explains each.
      settings = {
        system = "x86_64-linux";
        # The public half of the SSH key NIO uses for these Machines.
        rootAuthorizedKeys = [ ];
        # "host": NICO's secret files must already be on each host in
        # /var/lib/nico (nothing secret enters a Nix store).
        # "store": carried through the Nix store; works with NIO alone, but
        # the files are readable by every local user of the hosts.
        secretsSource = "host";
        stateVersion = "25.11";
      };

      # NIO writes cluster.nix next to this file (NICO's additionalFiles).
      # In a plain clone there is none, and the flake has only #minimal.
      cluster = if builtins.pathExists ./cluster.nix then import ./cluster.nix else null;
      names = if cluster == null then [ ] else (import ./lib/members.nix cluster).names;

      # Optional per-host module, e.g. its hardware-configuration.nix.
      hostModules = name:
        let file = ./hosts + "/${name}.nix"; in
        if builtins.pathExists file then [ file ] else [ ];

      node = name: nixpkgs.lib.nixosSystem {
        modules = [
          (import ./modules/base.nix settings)
          ./modules/nico.nix
          ./modules/k3s.nix
          {
            nico = {
              inherit cluster;
              machine = name;
              secrets.source = settings.secretsSource;
              secrets.checkout = ./.;
            };
          }
        ] ++ hostModules name;
      };
    in
    {
      nixosConfigurations =
        builtins.listToAttrs (map (name: { inherit name; value = node name; }) names)
        // {
          minimal = nixpkgs.lib.nixosSystem {
            modules = [ (import ./modules/base.nix settings) ./modules/minimal.nix ];
          };
        };
    };
}
