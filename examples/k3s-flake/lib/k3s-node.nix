# The k3s side of one node: its role and the exact k3s command line, from
# cluster.nix alone. Pure: builtins only, no nixpkgs; tests evaluate it with
# nix-instantiate.
#
#   import ./k3s-node.nix { cluster = import ./cluster.nix; machine = "cp-01"; }
#   => {
#        role = "server" | "agent";
#        bootstrap = true | false;   # this node initializes the cluster
#        flags = [ "server" "--cluster-init" "--token-file=..." ... ];   # k3s argv after the binary
#        serverAddress = "https://host:port" | null;   # where it joins; null on the bootstrap node
#        tlsSans = [ ... ];          # extra names in the API serving certificate (servers)
#        ...                         # see the attribute set at the end
#      }
#
# `paths` are where the files live on the host at run time. They are plain
# strings, never Nix paths: nothing here reads a secret or copies it into the
# Nix store.
{ cluster, machine, paths ? { } }:
let
  inherit (builtins)
    any attrNames concatStringsSep elem filter head length map match removeAttrs toString;

  members = import ./members.nix cluster;

  defaultPaths = {
    tokenFile = "/var/lib/nico/join-token"; # the server token: control-plane nodes only
    agentTokenFile = "/var/lib/nico/agent-token"; # the agent token: every node
    caCert = "/var/lib/nico/cluster-ca.crt";
    caKey = "/var/lib/nico/cluster-ca.key";
    etcdCaCert = "/var/lib/nico/etcd-ca.crt";
    etcdCaKey = "/var/lib/nico/etcd-ca.key";
    dataDir = "/var/lib/rancher/k3s";
  };
  unknownPaths = attrNames (removeAttrs paths (attrNames defaultPaths));
  p =
    if unknownPaths != [ ]
    then throw "k3s-node: unknown paths ${concatStringsSep ", " unknownPaths}; known: ${concatStringsSep ", " (attrNames defaultPaths)}"
    else defaultPaths // paths;

  listNames = nodes: if nodes == [ ] then "none" else concatStringsSep ", " (map (n: n.name) nodes);
  pick = nodes: filter (n: n.name == machine) nodes;
  inControlPlane = pick members.controlPlane;
  inWorkers = pick members.workers;
  isServer = inControlPlane != [ ];
  node =
    if isServer then head inControlPlane
    else if inWorkers != [ ] then head inWorkers
    else throw ("k3s-node: machine \"${machine}\" is not a node of cluster ${members.label} "
      + "(control plane: ${listNames members.controlPlane}; workers: ${listNames members.workers}). "
      + "NICO builds #<machine> only for the nodes listed in cluster.nix; a removed node gets #minimal.");

  bootstrap = isServer && machine == members.bootstrapNode;

  # Addresses may be IPv6, bracketed or not; URLs need brackets, flags and SANs none.
  unbracket = s: let m = match "\\[(.*)]" s; in if m == null then s else head m;
  isIPv4 = s: match "[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}" s != null;
  isIPv6 = s: match "[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*" s != null;
  isIP = s: isIPv4 s || isIPv6 s;
  url = host: port:
    let h = unbracket host; in
    "https://${if match ".*:.*" h != null then "[${h}]" else h}:${toString port}";

  address = unbracket node.address;
  endpointHost = unbracket members.endpoint.host;
  endpointPort = members.endpoint.port;
  endpointUrl = url endpointHost endpointPort;

  # When the endpoint is a control-plane node itself (NICO's default: the
  # bootstrap node on 6443), servers listen on the endpoint's port. Otherwise
  # the endpoint is a load balancer or virtual IP assumed to forward to the
  # servers' default port, 6443.
  endpointIsNode = any (n: unbracket n.address == endpointHost) members.controlPlane;
  apiPort = if endpointIsNode then endpointPort else 6443;

  # A server cannot join through itself: if the endpoint is this very node,
  # join through the bootstrap node (when cluster.nix still lists it).
  bootstrapNodes = filter (n: n.name == members.bootstrapNode) members.controlPlane;
  joinUrl =
    if isServer && address == endpointHost && bootstrapNodes != [ ]
    then url (head bootstrapNodes).address apiPort
    else endpointUrl;

  unique = list: builtins.foldl' (acc: x: if elem x acc then acc else acc ++ [ x ]) [ ] list;
  tlsSans = if isServer then unique [ endpointHost address ] else [ ];

  # Servers hold both tokens (the agent token is what they accept from agents);
  # agents only the agent token, which cannot decrypt the bootstrap data.
  tokenFiles = if isServer then [ p.tokenFile p.agentTokenFile ] else [ p.agentTokenFile ];
  tokenFlags =
    if isServer then [ "--token-file=${p.tokenFile}" "--agent-token-file=${p.agentTokenFile}" ]
    else [ "--token-file=${p.agentTokenFile}" ];

  common =
    tokenFlags
    ++ map (s: "--tls-san=${s}") tlsSans
    # --node-ip takes an IP; a host name is left to k3s to resolve.
    ++ (if isIP address then [ "--node-ip=${address}" ] else [ ])
    ++ [ "--node-name=${machine}" ]
    ++ (if isServer && apiPort != 6443 then [ "--https-listen-port=${toString apiPort}" ] else [ ])
    ++ (if p.dataDir != defaultPaths.dataDir then [ "--data-dir=${p.dataDir}" ] else [ ]);

  flags =
    if bootstrap then [ "server" "--cluster-init" ] ++ common
    else if isServer then [ "server" "--server=${joinUrl}" ] ++ common
    else [ "agent" "--server=${endpointUrl}" ] ++ common;

  # NICO's CA becomes k3s's server CA (signs the API serving certificate that
  # NICO's kubeconfig trusts) and client CA (verifies NICO's admin client
  # certificate). Placed on the bootstrap node before k3s first starts; the
  # other servers receive k3s's CAs from the cluster when they join.
  # NICO's etcd CA (clusters NICO issued one: cluster.nix then has `etcd`)
  # becomes the CA of k3s's embedded etcd, for clients and peers alike, so
  # NICO reaches etcd with the client certificate it signs from it; joiners
  # get it from the cluster too. etcd serves clients on the node's address,
  # port 2379 (`etcd.clientPort`), as NICO expects.
  etcdIssued = cluster ? etcd;
  tls = "${p.dataDir}/server/tls";
  caFiles =
    if bootstrap then [
      { source = p.caCert; target = "${tls}/server-ca.crt"; mode = "0644"; }
      { source = p.caKey; target = "${tls}/server-ca.key"; mode = "0600"; }
      { source = p.caCert; target = "${tls}/client-ca.crt"; mode = "0644"; }
      { source = p.caKey; target = "${tls}/client-ca.key"; mode = "0600"; }
    ] ++ (if etcdIssued then [
      { source = p.etcdCaCert; target = "${tls}/etcd/server-ca.crt"; mode = "0644"; }
      { source = p.etcdCaKey; target = "${tls}/etcd/server-ca.key"; mode = "0600"; }
      { source = p.etcdCaCert; target = "${tls}/etcd/peer-ca.crt"; mode = "0644"; }
      { source = p.etcdCaKey; target = "${tls}/etcd/peer-ca.key"; mode = "0600"; }
    ] else [ ]) else [ ];

  # A Kubernetes name may hold dots; a NixOS host name may not.
  labels = filter builtins.isString (builtins.split "\\." machine);
  firstLabel = head labels;
  hostName = if match "[[:alnum:]]([[:alnum:]_-]{0,61}[[:alnum:]])?" firstLabel != null then firstLabel else null;
  domain = if hostName != null && length labels > 1 then concatStringsSep "." (builtins.tail labels) else null;
in
# Any attribute, even `role` alone, fails for a machine that is not a member
# or for unknown paths.
builtins.seq node.name (builtins.seq p.tokenFile {
  name = machine;
  address = node.address;
  role = if isServer then "server" else "agent";
  controlPlane = isServer;
  inherit bootstrap flags tlsSans apiPort caFiles hostName domain etcdIssued;
  serverAddress = if bootstrap then null else if isServer then joinUrl else endpointUrl;
  endpoint = endpointUrl;
  tokenFile = if isServer then p.tokenFile else p.agentTokenFile;
  inherit tokenFiles;
  dataDir = p.dataDir;
})
