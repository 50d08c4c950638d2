% SymbolKG SWI-Prolog query harness (symbolkg.solvers.prolog.language): one JSON request per line on
% stdin, one reply per line on stdout. Started by symbolkg.solvers.prolog.process from its installed path.
:- use_module(library(http/json)).
:- use_module(library(sandbox)).
:- use_module(library(time)).
:- use_module(library(solution_sequences)).
:- use_module(library(error)).

:- include(policy).

allowed_library(L) :- pure_library(L).

main :-
    prompt(_, ''),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_output, encoding(utf8)),
    stream_property(In, alias(user_input)),
    stream_property(Out, alias(user_output)),
    current_prolog_flag(version, V),
    reply(Out, _{status:"ready", version:V}),
    serve(In, Out).

serve(In, Out) :-
    repeat,
    catch(json_read_dict(In, Req, [end_of_file(eof), value_string_as(string)]), E,
          (Req = bad(E))),
    (   Req == eof
    ->  !
    ;   handle_safely(Req, Reply),
        reply(Out, Reply),
        fail
    ).

reply(Out, Dict) :-
    json_write_dict(Out, Dict, [width(0)]),
    nl(Out),
    flush_output(Out).

handle_safely(bad(E), _{status:"error", message:M}) :- !,
    message_string(E, M).
handle_safely(Req, Reply) :-
    catch(handle(Req, Reply), E, (message_string(E, M), Reply = _{status:"error", message:M})),
    !.
handle_safely(_, _{status:"error", message:"internal: request handler failed"}).

handle(Req, Reply) :-
    Req.get(op) == "ping", !,
    Reply = _{status:"ok"}.
%   Each request runs in its own thread: it gets its own stacks (capped at
%   stack_limit_mb), global variables and tables, and abort/0 (which the sandbox
%   allows and catch/3 cannot stop) ends only that thread.
handle(Req, Reply) :-
    StackBytes is Req.stack_limit_mb * 1024 * 1024,
    set_prolog_flag(table_space, StackBytes),
    thread_self(Me),
    thread_create(worker(Me, Req), Id, [stack_limit(StackBytes)]),
    thread_join(Id, Status),
    (   thread_get_message(Me, skg_reply(Reply0), [timeout(0)])
    ->  Reply = Reply0
    ;   Status = exception('$aborted')
    ->  Reply = _{status:"error", message:"the program called abort/0"}
    ;   Status = exception(E)
    ->  error_reply(E, Reply)
    ;   format(string(Msg), "request thread ended with ~q", [Status]),
        Reply = _{status:"error", message:Msg}
    ),
    garbage_collect_atoms.

worker(Parent, Req) :-
    nb_setval(skg_depth_hit, false),
    nb_setval(skg_solutions, []),
    catch(call_with_time_limit(Req.time_limit,
              in_temporary_module(M, true, run(M, Req, Reply0))),
          E, error_reply(E, Reply0)),
    thread_send_message(Parent, skg_reply(Reply0)).

%!  run(+Module, +Request, -Reply)
run(M, Req, Reply) :-
    catch(load_program(M, Req.program), load_error(Kind, Line, E), true),
    (   nonvar(Kind)
    ->  load_reply(Kind, Line, E, Reply)
    ;   Req.get(goal, "") == ""
    ->  Reply = _{status:"loaded"}
    ;   catch(term_string(Goal, Req.goal, [variable_names(Vs), module(M), syntax_errors(error)]), QE, true),
        (   nonvar(QE)
        ->  message_string(QE, Msg), Reply = _{status:"query_syntax_error", message:Msg}
        ;   \+ callable(Goal)
        ->  format(string(Msg), "the query ~q is not a callable goal", [Goal]),
            Reply = _{status:"query_syntax_error", message:Msg}
        ;   check_safe(M, Goal, Unsafe),
            (   Unsafe \== none
            ->  Reply = Unsafe
            ;   run_goal(M, Goal, Vs, Req, Reply)
            )
        )
    ).

load_reply(syntax, Line, error(syntax_error(What), Where), _{status:"syntax_error", line:Line, message:Msg}) :- !,
    message_string(error(syntax_error(What), _), Msg0),
    (   Where = stream(_, _, LinePos, _)
    ->  Col is LinePos + 1, format(string(Msg), "~w (line ~w, column ~w)", [Msg0, Line, Col])
    ;   Msg = Msg0
    ).
load_reply(Kind, Line, E, _{status:S, line:Line, message:Msg}) :-
    atom_string(Kind, S),
    message_string(E, Msg).

%!  load_program(+Module, +Text)
%   Reads the program term by term, so that every error carries its line,
%   directives pass a whitelist and clauses stay inside Module.
load_program(M, Text) :-
    setup_call_cleanup(open_string(Text, S), load_terms(M, S), close(S)).

load_terms(M, S) :-
    repeat,
    catch(read_term(S, T, [module(M), term_position(P), syntax_errors(error), variable_names(_)]), E,
          syntax_error_line(E)),
    (   T == end_of_file
    ->  !
    ;   stream_position_data(line_count, P, Line),
        add_term(M, T, Line),
        fail
    ).

syntax_error_line(E) :-
    (   E = error(_, stream(_, Line, _, _)) -> true
    ;   E = error(_, string(_, _)) -> Line = 0
    ;   Line = 0
    ),
    throw(load_error(syntax, Line, E)).

add_term(_, T, Line) :-
    var(T), !,
    throw(load_error(load_error, Line, format("a clause cannot be a variable", []))).
add_term(M, (:- D), Line) :- !,
    directive(M, D, Line).
add_term(_, (?- _), Line) :- !,
    throw(load_error(load_error, Line, format("'?- Goal.' lines are not run; put the goal on a '% query: Goal' line", []))).
add_term(M, T, Line) :-
    catch(expand_term(T, X), E, throw(load_error(load_error, Line, E))),
    (   is_list(X) -> Clauses = X ; Clauses = [X] ),
    forall(member(C, Clauses), add_clause(M, C, Line)).

add_clause(M, C, Line) :-
    (   C = (H :- _) -> true ; H = C ),
    (   var(H)
    ->  throw(load_error(load_error, Line, format("a clause head cannot be a variable", [])))
    ;   H = _:_
    ->  throw(load_error(load_error, Line, format("clauses for other modules (~q) are not allowed", [H])))
    ;   \+ callable(H)
    ->  throw(load_error(load_error, Line, format("~q cannot be a clause head", [H])))
    ;   catch(assertz(M:C), E, clause_error(E, Line))
    ).

clause_error(error(permission_error(modify, static_procedure, PI), _), Line) :- !,
    unqualify(_, PI, Name),
    throw(load_error(load_error, Line, format("~w is a built-in predicate and cannot be redefined; give your predicate another name", [Name]))).
clause_error(E, Line) :-
    throw(load_error(load_error, Line, E)).

directive(M, D, Line) :-
    (   allowed_directive(D)
    ->  catch(M:D, E, throw(load_error(load_error, Line, E)))
    ;   callable(D), functor(D, initialization, _)
    ->  throw(load_error(unsafe, Line, format("initialization directives are not run; put the goal on a '% query: Goal' line", [])))
    ;   callable(D)
    ->  functor(D, N, A),
        throw(load_error(unsafe, Line, format("directive ~q/~w is not allowed; allowed: table/1, dynamic/1, discontiguous/1, op/3, use_module(library(L)) for L in lists, apply, aggregate, clpfd, ...", [N, A])))
    ;   throw(load_error(unsafe, Line, format("a directive must be a goal", [])))
    ).

allowed_directive(D) :- var(D), !, fail.
allowed_directive(table(Specs)) :- local_specs(Specs).
allowed_directive(dynamic(Specs)) :- local_specs(Specs).
allowed_directive(discontiguous(Specs)) :- local_specs(Specs).
allowed_directive(op(P, T, Names)) :- integer(P), P >= 0, P =< 1200, atom(T), local_specs(Names).
allowed_directive(use_module(library(L))) :- atom(L), allowed_library(L).
allowed_directive(use_module(library(L), _)) :- atom(L), allowed_library(L).
allowed_directive(ensure_loaded(library(L))) :- atom(L), allowed_library(L).

local_specs(S) :- var(S), !, fail.
local_specs(_:_) :- !, fail.
local_specs((A, B)) :- !, local_specs(A), local_specs(B).
local_specs([]) :- !.
local_specs([H|T]) :- !, local_specs(H), local_specs(T).
local_specs(S) :- \+ sub_term(_:_, S).

%!  check_safe(+M, +Goal, -Reply)
%   Reply is none if library(sandbox) accepts Goal (and everything it can reach).
check_safe(M, Goal, Reply) :-
    catch((safe_goal(M:Goal), Reply = none), E, unsafe_reply(M, E, Reply)).

unsafe_reply(M, error(existence_error(procedure, PI), _), Reply) :- !,
    unqualify(M, PI, Name),
    format(string(Msg), "unknown procedure ~w: it is called but has no clauses; define it, fix its name or number of arguments, or declare it with ':- dynamic ~w.'", [Name, Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
unsafe_reply(M, error(permission_error(call, sandboxed, G), _), Reply) :-
    callable(G), strip_module(G, GM, P), GM == M, !,
    functor(P, N, A),
    format(string(Name), "~w/~w", [N, A]),
    format(string(Msg), "unknown procedure ~w: it is called but has no clauses; define it, fix its name or number of arguments, or declare it with ':- dynamic ~w.'", [Name, Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
unsafe_reply(_, error(instantiation_error, _), Reply) :- !,
    Reply = _{status:"unsafe", message:"a goal is called through a variable (call/N on an unbound goal); the sandbox only allows calls it can check"}.
unsafe_reply(_, E, _{status:"unsafe", message:Msg}) :-
    message_string(E, Msg0),
    string_concat("refused by the sandbox (no files, processes, streams or global state): ", Msg0, Msg).

unqualify(_, _:PI, S) :- !, pi_string(PI, S).
unqualify(_, PI, S) :- pi_string(PI, S).

pi_string(N/A, S) :- !, format(string(S), "~w/~w", [N, A]).
pi_string(N//A, S) :- !, format(string(S), "~w//~w", [N, A]).
pi_string(G, S) :- callable(G), !, functor(G, N, A), format(string(S), "~w/~w", [N, A]).
pi_string(X, S) :- format(string(S), "~w", [X]).

%!  run_goal(+M, +Goal, +VarNames, +Req, -Reply)
run_goal(M, Goal, Vs, Req, Reply) :-
    Max = Req.max_answers,
    Depth = Req.depth_limit,
    with_output_to(string(Output),
        forall(limit(Max, solve_once(M, Goal, Depth, Vs)), true)),
    nb_getval(skg_depth_hit, Hit),
    found_solutions(Sols),
    length(Sols, N),
    ( N >= Max -> Complete = false ; Complete = true ),
    sub_string_max(Output, 10000, Out),
    Reply = _{status:"ok", solutions:Sols, depth_limited:Hit, complete:Complete, output:Out}.

solve_once(M, Goal, Depth, Vs) :-
    call_with_depth_limit(M:Goal, Depth, R),
    (   R == depth_limit_exceeded
    ->  nb_setval(skg_depth_hit, true), fail
    ;   format_bindings(Vs, Sol),
        nb_getval(skg_solutions, Sols0),
        nb_setval(skg_solutions, [Sol|Sols0])
    ).

found_solutions(Sols) :-
    nb_getval(skg_solutions, Rev),
    reverse(Rev, Sols).

format_bindings(Vs, Sol) :-
    copy_term(Vs, Vs2, Residual),
    term_variables(Vs2-Residual, Free),
    name_free(Free, 1),
    findall([Name, Text], (member(Name=Value, Vs2), \+ sub_atom(Name, 0, _, _, '_'), value_text(Value, Text)), Pairs),
    (   Residual == []
    ->  Sol = _{bindings:Pairs}
    ;   value_text(Residual, RT), Sol = _{bindings:Pairs, residual:RT}
    ).

name_free([], _).
name_free([V|Vs], I) :- atom_concat('_', I, N), V = '$VAR'(N), I1 is I + 1, name_free(Vs, I1).

value_text(V, Text) :-
    format(string(Text), "~W", [V, [quoted(true), numbervars(true), max_depth(50), cycles(true), portray(false)]]).

sub_string_max(S, Max, Out) :-
    string_length(S, L),
    ( L =< Max -> Out = S ; sub_string(S, 0, Max, _, Out) ).

error_reply(time_limit_exceeded, _{status:"timeout", message:"time limit exceeded", solutions:Sols}) :- !,
    found_solutions(Sols).
error_reply(error(resource_error(R), _), _{status:"memory", message:Msg}) :- !,
    format(string(Msg), "resource limit exceeded (~w)", [R]).
error_reply(error(existence_error(procedure, PI), _), Reply) :- !,
    unqualify(_, PI, Name),
    format(string(Msg), "unknown procedure ~w", [Name]),
    Reply = _{status:"undeclared", message:Msg, predicate:Name}.
error_reply(E, _{status:"error", message:Msg}) :-
    message_string(E, Msg).

message_string(format(F, A), S) :- !, format(string(S), F, A).
message_string(E, S) :-
    catch(( phrase('$messages':translate_message(E), Lines),
            with_output_to(string(S0), print_message_lines(current_output, '', Lines)),
            split_string(S0, "", " \n", [S]) ), _, fail), !.
message_string(E, S) :- format(string(S), "~q", [E]).

:- initialization(main, main).
