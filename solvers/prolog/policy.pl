% Shared by the SWI-Prolog harnesses of SymbolKG (query_harness.pl and session_harness.pl), included
% into each: what the sandbox lets client code do on top of library(sandbox)'s own rules.

% Output goes to a per-request capture stream, so the plain output predicates are as
% harmless as writeln/1, which the sandbox allows.
:- multifile sandbox:safe_primitive/1.
sandbox:safe_primitive(system:write(_)).
sandbox:safe_primitive(system:print(_)).
sandbox:safe_primitive(system:writeq(_)).
sandbox:safe_primitive(system:write_canonical(_)).
sandbox:safe_primitive(system:write_term(_, _)).
sandbox:safe_primitive(system:nl).
sandbox:safe_primitive(system:tab(_)).
sandbox:safe_primitive(system:put_char(_)).

%!  pure_library(?Name)
%   The libraries a program may load (use_module(library(Name))): pure ones, no I/O, no processes.
pure_library(lists).
pure_library(apply).
pure_library(aggregate).
pure_library(clpfd).
pure_library(clpb).
pure_library(pairs).
pure_library(ordsets).
pure_library(assoc).
pure_library(yall).
pure_library(dif).
pure_library(between).
pure_library(solution_sequences).
pure_library(apply_macros).
pure_library(dicts).
pure_library(strings).
pure_library(occurs).
pure_library(ugraphs).
pure_library(tabling).
