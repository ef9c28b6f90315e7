# Checks a cluster.nix value (format: docs/cluster-nix.md in the NICO
# repository) and answers its members. Pure: builtins only, no nixpkgs, so
# it evaluates anywhere, even without a Nix store.
#
#   import ./members.nix (import ./cluster.nix)
#   => { names; controlPlane; workers; nodes; endpoint; bootstrapNode; label; }
#
# A malformed cluster.nix makes every use throw, with a message that names
# the cluster and the field.
cluster:
let
  inherit (builtins)
    all concatStringsSep elemAt filter genList isAttrs isInt isList
    isString length map typeOf;

  label =
    if isAttrs cluster && isString (cluster.namespace or null) && isString (cluster.name or null)
    then "${cluster.namespace}/${cluster.name}"
    else "(unnamed)";

  fail = msg: throw "cluster.nix of cluster ${label}: ${msg}";
  expect = ok: msg: ok || fail msg;
  nonEmptyString = v: isString v && v != "";
  describe = v: if isString v then "the string \"${v}\"" else "a ${typeOf v}";

  reserved = [ "minimal" ];

  nodeChecks = group: list:
    genList
      (i:
        let
          n = elemAt list i;
          at = "${group}[${toString i}]";
        in
        expect (isAttrs n) "${at} must be an attribute set { name; address; }, found ${describe n}"
        && expect (nonEmptyString (n.name or null)) "${at}.name must be a non-empty string"
        && expect (nonEmptyString (n.address or null)) "${at}.address (node ${n.name}) must be a non-empty string")
      (length list);

  shapeOk =
    expect (isAttrs cluster) "expected an attribute set, found ${describe cluster}"
    && expect (nonEmptyString (cluster.name or null)) "name must be a non-empty string"
    && expect (nonEmptyString (cluster.namespace or null)) "namespace must be a non-empty string"
    && expect (isAttrs (cluster.endpoint or null)) "endpoint must be an attribute set { host; port; }"
    && expect (nonEmptyString (cluster.endpoint.host or null)) "endpoint.host must be a non-empty string"
    && expect (isInt (cluster.endpoint.port or null) && cluster.endpoint.port >= 1 && cluster.endpoint.port <= 65535)
      "endpoint.port must be an integer from 1 to 65535, found ${describe (cluster.endpoint.port or null)}"
    && expect (nonEmptyString (cluster.bootstrapNode or null)) "bootstrapNode must be a non-empty string"
    && expect (isList (cluster.controlPlane or null)) "controlPlane must be a list"
    && expect (isList (cluster.workers or null)) "workers must be a list"
    && expect (cluster.controlPlane != [ ]) "controlPlane must list at least one node"
    && all (x: x) (nodeChecks "controlPlane" cluster.controlPlane)
    && all (x: x) (nodeChecks "workers" cluster.workers);

  nodes = cluster.controlPlane ++ cluster.workers;
  names = map (n: n.name) nodes;
  unique = builtins.foldl' (acc: x: if builtins.elem x acc then acc else acc ++ [ x ]) [ ];
  duplicates = unique (filter (n: length (filter (m: m == n) names) > 1) names);
  clashes = filter (n: builtins.elem n reserved) names;

  membersOk =
    expect (duplicates == [ ]) "node names must be unique, found ${concatStringsSep ", " duplicates} more than once"
    && expect (clashes == [ ])
      "a node may not be named ${concatStringsSep ", " clashes}: the flake's #minimal is the configuration NIO applies on removal";

  valid = shapeOk && membersOk;
  checked = v: if valid then v else fail "invalid";
in
checked {
  inherit label;
  inherit (cluster) endpoint bootstrapNode;
  controlPlane = cluster.controlPlane;
  workers = cluster.workers;
  # Control plane first, then workers, each in cluster.nix order.
  inherit names nodes;
}
