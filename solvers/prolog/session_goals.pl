% Part of session_harness.pl (module skg_session, included): goals, typed answers, errors.

% ---------------------------------------------------------------- goals

%!  parse_goal(+M, +Text, -Goal, -Bindings)
%   Exactly one term: a missing final '.' is supplied, and any text after the
%   term (a second goal, '. halt.') is a syntax error.
parse_goal(M, Text, Goal, Vs) :-
    (   catch(read_one(M, Text, Goal0, Vs0), error(syntax_error(end_of_file), _), fail)
    ->  true
    ;   string_concat(Text, "\n.", Text1),
        read_one(M, Text1, Goal0, Vs0)
    ),
    (   Goal0 == end_of_file, \+ sub_string(Text, _, _, _, "end_of_file")
    ->  throw(skg_error(syntax_error, "the goal is empty", none))
    ;   true
    ),
    Goal = Goal0, Vs = Vs0.

read_one(M, Text, T, Vs) :-
    setup_call_cleanup(open_string(Text, S),
        (   catch(read_term(S, T, [module(M), variable_names(Vs), syntax_errors(error)]), E, goal_syntax(E)),
            catch(read_term(S, T2, [module(M), syntax_errors(error)]), E2, true),
            (   nonvar(E2), E2 = error(syntax_error(end_of_file), _)
            ->  throw(E2)                  % more text without a final '.': parse_goal adds one
            ;   nonvar(E2)
            ->  throw(skg_error(syntax_error, "the goal text holds more than one term: give one goal (join goals with ',')", none))
            ;   T2 \== end_of_file
            ->  throw(skg_error(syntax_error, "the goal text holds more than one term: give one goal (join goals with ',')", none))
            ;   true
            )
        ),
        close(S)).

goal_syntax(error(syntax_error(end_of_file), Ctx)) :- !,
    throw(error(syntax_error(end_of_file), Ctx)).
goal_syntax(error(syntax_error(What), Ctx)) :- !,
    syntax_text(What, Msg0),
    (   Ctx = stream(_, L, LP, _) -> C is LP + 1, format(string(Msg), "~w (goal line ~w, column ~w)", [Msg0, L, C]) ; Msg = Msg0 ),
    format(string(T), "~q", [syntax_error(What)]),
    throw(skg_error(syntax_error, Msg, T)).
goal_syntax(E) :- throw(E).

check_goal(M, Goal) :-
    (   var(Goal) -> throw(error(instantiation_error, goal)) ; true ),
    (   callable(Goal) -> true ; throw(error(type_error(callable, Goal), _)) ),
    library_policy(Goal),
    safe_goal(M:Goal).

run(M, Req, Reply) :-
    parse_goal(M, Req.goal, Goal, Vs0),
    exclude(hidden_var, Vs0, Vs),
    check_goal(M, Goal),
    kb_stamp(M, S0),
    retractall(answer(_, _)),
    nb_setval(skg_count, 0),
    nb_setval(skg_more, false),
    nb_setval(skg_depth_hit, false),
    Skip = Req.skip, Max = Req.max_answers, Depth = Req.max_depth, Id = Req.id, Limit = Req.time_limit,
    with_capture(Req.max_output_chars,
                 client_call(Id, Limit, collect(M, Goal, Vs, Skip, Max, Depth), E),
                 Output, OutTrunc),
    findall(A, answer(A, _), Answers),
    findall(R, answer(_, R), Residuals),
    retractall(answer(_, _)),
    kb_stamp(M, S1),
    ( S0 == S1 -> Modified = false ; Modified = true ),
    nb_getval(skg_more, More),
    nb_getval(skg_depth_hit, DepthHit),
    length(Answers, NA),
    (   var(E)
    ->  (   NA > 0 -> Outcome = "success"
        ;   DepthHit == true -> Outcome = "depth_exceeded"
        ;   Outcome = "failure"
        ),
        ( ( More == true ; DepthHit == true, NA > 0 ) -> Truncated = true ; Truncated = false )
    ;   stop_outcome(E, Outcome)
    ->  Truncated = true
    ;   throw(E)
    ),
    kb_clauses(M, K),
    Reply = _{ok:true, outcome:Outcome, answers:Answers, residuals:Residuals, output:Output,
              output_truncated:OutTrunc, truncated:Truncated, depth_limited:DepthHit,
              kb_modified:Modified, kb_clauses:K}.

%!  stop_outcome(+Ball, -Outcome)
%   The outcome of a goal stopped by one of the request's own stop balls.
stop_outcome(skg_limit(time), "timeout").
stop_outcome(skg_limit(inference), "inference_limit").
stop_outcome(skg_cancelled, "cancelled").

hidden_var(Name = _) :- sub_atom(Name, 0, _, _, '_').

collect(M, Goal, Vs, Skip, Max, Depth) :-
    Stop is Skip + Max,
    prolog_current_frame(F),
    prolog_frame_attribute(F, level, Level),
    Abs is Level + Depth,
    nb_setval(skg_depth_abs, Abs),         % a nested call_with_depth_limit/3 is cut here too
    (   call_with_depth_limit(call_cleanup(M:Goal, Det = true), Depth, R),
        (   R == depth_limit_exceeded
        ->  nb_setval(skg_depth_hit, true), fail
        ;   true
        ),
        nb_getval(skg_count, N0), N is N0 + 1, nb_setval(skg_count, N),
        (   N > Skip -> record_answer(M, Vs) ; true ),
        N >= Stop,
        (   var(Det) -> nb_setval(skg_more, true) ; true )   % before the cut below binds Det
    ->  true
    ;   true
    ).

% Stamp of the knowledge base: it changes when a goal asserts or retracts.
kb_stamp(M, Max-Count) :-
    aggregate_all(max(G)-count,
                  ( local_pi(M, N, A), functor(H, N, A), predicate_property(M:H, last_modified_generation(G)) ),
                  Max-Count), !.
kb_stamp(_, 0-0).

%!  with_capture(+MaxChars, :Goal, -Output, -Truncated)
%   Runs Goal with current_output sent to a capture stream that keeps at most
%   MaxChars characters (the rest is counted and dropped).
:- meta_predicate with_capture(+, 0, -, -).
with_capture(Max, Goal, Output, Truncated) :-
    retractall(out_chunk(_)),
    nb_setval(skg_out_len, 0),
    nb_setval(skg_out_cap, Max),
    nb_setval(skg_out_trunc, false),
    current_output(Old),
    open_prolog_stream(skg_session, write, S, []),
    set_stream(S, buffer(full)),
    setup_call_cleanup(set_output(S), once(Goal), ( set_output(Old), catch(close(S), _, true) )),
    findall(C, retract(out_chunk(C)), Cs),
    atomics_to_string(Cs, Output0),
    string_length(Output0, Len),
    (   Len > Max -> sub_string(Output0, 0, Max, _, Output), Truncated = true
    ;   Output = Output0, nb_getval(skg_out_trunc, Truncated)
    ).

stream_write(_, String) :-
    nb_getval(skg_out_len, N0),
    nb_getval(skg_out_cap, Cap),
    (   N0 >= Cap
    ->  nb_setval(skg_out_trunc, true)
    ;   string_length(String, L),
        N is N0 + L,
        nb_setval(skg_out_len, N),
        assertz(out_chunk(String))
    ).

stream_close(_).

% ---------------------------------------------------------------- typed answers

record_answer(M, Vs) :-
    copy_term(Vs, Vs2, Residual0),
    maplist(strip_module_goal, Residual0, Residual),
    term_variables(Vs2-Residual, Free),
    name_free(Free, 1),
    findall(Name-J, ( member(Name=V, Vs2), json_value(V, J) ), Pairs),
    dict_pairs(Answer, _, Pairs),
    (   Residual == []
    ->  RText = ""
    ;   residual_text(M, Residual, RText)
    ),
    assertz(answer(Answer, RText)).

strip_module_goal(_:G, G) :- !.
strip_module_goal(G, G).

name_free([], _).
name_free([V|Vs], I) :-
    atom_concat('_G', I, N),
    V = '$VAR'(N),
    I1 is I + 1,
    name_free(Vs, I1).

residual_text(M, Goals, Text) :-
    with_output_to(string(Text),
        forall(nth1(I, Goals, G),
               (   ( I > 1 -> write(', ') ; true ),
                   write_term(G, [quoted(true), numbervars(true), module(M), max_depth(50), portray(false)])
               ))).

json_value(V, J) :-
    (   cyclic_term(V)
    ->  format(string(T0), "~W", [V, [quoted(true), numbervars(true), cycles(true), portray(false)]]),
        cap_string(T0, 20000, T),
        J = _{term:T}
    ;   term_size(V, Size), Size > 200000
    ->  term_text(V, T), J = _{term:T}
    ;   json_term(V, J)
    ).

json_term(V, J) :- var(V), !, J = _{var:"_"}.
json_term('$VAR'(N), J) :- atom(N), sub_atom(N, 0, _, _, '_G'), !, atom_string(N, S), J = _{var:S}.
json_term(V, V) :- integer(V), !.
json_term(V, J) :- float(V), !,
    (   float_class(V, C), memberchk(C, [nan, infinite]) -> term_text(V, T), J = _{term:T} ; J = V ).
json_term(V, J) :- number(V), !, term_text(V, T), J = _{term:T}.     % rationals
json_term(V, J) :- string(V), !, J = _{string:V}.
json_term([], []) :- !.
json_term(V, J) :- atom(V), !, atom_string(V, J).
json_term(V, J) :- is_list(V), !, maplist(json_term, V, J).
json_term(V, J) :- is_dict(V), !, term_text(V, T), J = _{term:T}.
json_term(V, J) :- compound(V), !,
    compound_name_arguments(V, F, Args),
    atom_string(F, FS),
    maplist(json_term, Args, JArgs),
    J = _{functor:FS, args:JArgs}.
json_term(V, J) :- term_text(V, T), J = _{term:T}.                    % blobs

term_text(V, T) :-
    format(string(T0), "~W", [V, [quoted(true), numbervars(true), max_depth(200), cycles(true), portray(false)]]),
    cap_string(T0, 20000, T).

cap_string(S, Max, Out) :-
    string_length(S, L),
    (   L =< Max -> Out = S ; sub_string(S, 0, Max, _, S1), string_concat(S1, "...", Out) ).

% ---------------------------------------------------------------- errors

error_dict(E, _{kind:K, message:Msg, prolog_term:T}) :-
    error_kind(E, K0), atom_string(K0, K),
    error_term(E, T),
    copy_term(E, E2),                      % printing the message may bind its variables
    error_message(E2, Msg0), cap_string(Msg0, 4000, Msg).

error_term(skg_error(_, _, none), null) :- !.
error_term(skg_error(_, _, T), S) :- !, ( string(T) -> S = T ; term_text_short(T, S) ).
error_term(E, S) :- term_text_short(E, S).

term_text_short(T, S) :-
    format(string(S0), "~W", [T, [quoted(true), max_depth(30), portray(false), cycles(true)]]),
    cap_string(S0, 2000, S).

error_kind(skg_error(K, _, _), K) :- !.
error_kind(error(Formal, _), K) :- nonvar(Formal), formal_kind(Formal, K), !.
error_kind(_, execution_exception).

formal_kind(syntax_error(_), syntax_error).
formal_kind(existence_error(_, _), existence_error).
formal_kind(existence_error(_, _, _), existence_error).
formal_kind(type_error(_, _), type_error).
formal_kind(instantiation_error, instantiation_error).
formal_kind(permission_error(_, _, _), permission_error).
formal_kind(resource_error(_), resource_error).

error_message(skg_error(_, Msg, _), Msg) :- !.
error_message(error(existence_error(procedure, G), sandbox(_, _)), Msg) :- !,
    pi_text(G, Name),
    format(string(Msg), "Unknown procedure: ~w (it is called but has no clauses: define it, fix its name or arity, or declare it with ':- dynamic ~w.')", [Name, Name]).
error_message(error(permission_error(call, sandboxed, G), sandbox(_, Parents)), Msg) :- !,
    pi_text(G, Name),
    (   Parents = [P|_] -> pi_text(P, PN), format(string(Via), " (reached from ~w)", [PN]) ; Via = "" ),
    format(string(Msg), "refused by the sandbox: ~w may not be called in a session~w; sessions cannot read or write files, start processes, open streams or sockets, change flags, or touch other modules", [Name, Via]).
error_message(error(instantiation_error, sandbox(_, _)), Msg) :- !,
    Msg = "refused by the sandbox: a goal is called through a variable (call/N of an unbound goal), which cannot be checked".
error_message(error(syntax_error(What), _), Msg) :- !,
    syntax_text(What, Msg).
error_message(error(resource_error(R), _), Msg) :- !,
    (   R == stack -> current_prolog_flag(stack_limit, B), MB is B // (1024 * 1024),
        format(string(Msg), "resource error: the Prolog stacks are full (limit ~w MB); the goal builds too large a term or recurses too deep", [MB])
    ;   R == table_space -> format(string(Msg), "resource error: the table space is full", [])
    ;   format(string(Msg), "resource error: ~w", [R])
    ).
error_message(E, Msg) :-
    E \= error(_, _), !,
    format(string(Msg), "the goal raised the exception ~W (uncaught)", [E, [quoted(true), max_depth(20), portray(false)]]).
error_message(E, Msg) :-
    message_lines(E, Msg), !.
error_message(E, Msg) :-
    format(string(Msg), "~q", [E]).

message_lines(E, S) :-
    catch(( phrase('$messages':translate_message(E), Lines),
            with_output_to(string(S0), print_message_lines(current_output, '', Lines)),
            split_string(S0, "", " \n", [S]) ), _, fail).

pi_text(V, "_") :- var(V), !.
pi_text(_:PI, S) :- !, pi_text(PI, S).
pi_text(N/A, S) :- !, format(string(S), "~w/~w", [N, A]).
pi_text(N//A, S) :- !, format(string(S), "~w//~w", [N, A]).
pi_text(G, S) :- callable(G), !, functor(G, N, A), format(string(S), "~w/~w", [N, A]).
pi_text(X, S) :- format(string(S), "~w", [X]).

