# POSIX shell quoting, for building command lines from data. Pure.
#
#   (import ./shell.nix).args [ "a b" "it's" ]  =>  "'a b' 'it'\''s'"
let
  arg = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] (toString s) + "'";
in
{
  inherit arg;
  args = list: builtins.concatStringsSep " " (map arg list);
}
