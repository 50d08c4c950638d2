% Part of session_harness.pl (module skg_session, included): inspect, source, trace, tests.

% ---------------------------------------------------------------- inspect / source

inspect(M, Req, Reply) :-
    atom_string(N, Req.name),
    A = Req.arity,
    functor(H, N, A),
    (   local_pi(M, N, A)
    ->  (   ( declared_dynamic(N, A) ; \+ pred_seq(N, A, _) ) -> Type = "dynamic" ; Type = "user" ),
        ( predicate_property(M:H, number_of_clauses(Count)) -> true ; Count = 0 ),
        findall(Ref, clause(M:H, _, Ref), Refs),
        ( length(Refs, L), L > 1000 -> length(Shown, 1000), append(Shown, _, Refs) ; Shown = Refs ),
        maplist(clause_text(M), Shown, Texts),
        ( predicate_property(M:H, tabled) -> Tabled = true ; Tabled = false ),
        ( predicate_property(M:H, dynamic) -> Dyn = true ; Dyn = false ),
        Reply = _{ok:true, found:true, type:Type, exported:false, clause_count:Count, clauses:Texts, tabled:Tabled, dynamic:Dyn}
    ;   current_predicate(system:N/A)
    ->  Reply = _{ok:true, found:true, type:"builtin", exported:true, clause_count:0, clauses:[], tabled:false, dynamic:false}
    ;   current_predicate(M:N/A), predicate_property(M:H, imported_from(_))
    ->  library_reply(M:H, Reply)
    ;   catch('$find_library'(M, N, A, _, _), _, fail)
    ->  Reply = _{ok:true, found:true, type:"library", exported:true, clause_count:0, clauses:[], tabled:false, dynamic:false}
    ;   findall(S, ( local_pi(M, N2, A2), format(string(S), "~w/~w", [N2, A2]) ), Ps),
        findall(S, ( between(0, 8, A2), A2 =\= A, functor(_, N, A2),
                     ( current_predicate(system:N/A2) ; catch('$find_library'(M, N, A2, _, _), _, fail) ),
                     format(string(S), "~w/~w", [N, A2]) ), Same),
        Reply = _{ok:true, found:false, type:null, exported:false, clause_count:0, clauses:[], tabled:false, dynamic:false,
                  predicates:Ps, same_name:Same}
    ).

library_reply(MH, Reply) :-
    ( predicate_property(MH, number_of_clauses(C)) -> true ; C = 0 ),
    Reply = _{ok:true, found:true, type:"library", exported:true, clause_count:C, clauses:[], tabled:false, dynamic:false}.

clause_text(M, Ref, Text) :-
    (   display(Ref, T)
    ->  true
    ;   clause(M:H, B, Ref),
        ( B == true -> T = H ; T = (H :- B) )
    ),
    portray_text(M, T, Text).

% Printed with the operators of the session module (clpfd's #=, user ops).
portray_text(M, T, Text) :-
    with_output_to(string(Text0), portray_clause(current_output, T, [portray(false), module(M)])),
    split_string(Text0, "", "\n", [Text]).

source(M, Text) :-
    with_output_to(string(Text0), source_(M)),
    Text = Text0.

source_(M) :-
    forall(directive_src(_, D), format(":- ~W.~n", [D, [quoted(true), portray(false), spacing(next_argument), module(M)]])),
    ( directive_src(_, _) -> nl ; true ),
    findall(Seq-(N/A), ( pred_seq(N, A, Seq), local_pi(M, N, A) ), Known),
    findall(N/A, ( local_pi(M, N, A), \+ pred_seq(N, A, _) ), Others0),
    sort(Others0, Others),
    sort(Known, KnownSorted),
    pairs_values(KnownSorted, KnownPIs),
    forall(member(N/A, Others), format(":- dynamic ~q.~n", [N/A])),
    ( Others == [] -> true ; nl ),
    append(KnownPIs, Others, All),
    forall(member(N/A, All),
           (   functor(H, N, A),
               (   \+ \+ clause(M:H, _, _)
               ->  forall(clause(M:H, _, Ref), ( clause_text(M, Ref, T), write(T), nl )),
                   nl
               ;   true
               )
           )),
    findall(U, unit_options(U, _), Units),
    forall(member(U, Units), unit_source(M, U)).

unit_source(M, U) :-
    unit_options(U, Opts),
    (   Opts == [] -> portray_clause((:- begin_tests(U))) ; portray_clause((:- begin_tests(U, Opts))) ),
    forall(test_case(U, _, _, _, _, _, Display),
           (   Display = test(Name, TOpts) - Body,
               ( TOpts == [] -> Head = test(Name) ; Head = test(Name, TOpts) ),
               ( Body == true -> C = Head ; C = (Head :- Body) ),
               portray_clause(current_output, C, [portray(false), module(M)])
           )),
    portray_clause((:- end_tests(U))),
    nl.

% ---------------------------------------------------------------- trace

trace_request(M, Req, Reply) :-
    parse_goal(M, Req.goal, Goal, Vs0),
    exclude(hidden_var, Vs0, Vs),
    check_goal(M, Goal),
    nb_setval(skg_nodes, 0),
    nb_setval(skg_depth_cut, false),
    nb_setval(skg_node_cut, false),
    Ctx = ctx(M, Req.max_depth, Req.max_nodes),
    Id = Req.id, Limit = Req.time_limit,
    with_capture(Req.max_output_chars,
                 client_call(Id, Limit, ( mi(Ctx, Goal, 1, Nodes) -> Outcome = "success" ; Outcome = "failure" ), E),
                 Output, _),
    (   var(E) -> true
    ;   stop_outcome(E, Outcome) -> true
    ;   throw(E)
    ),
    (   Outcome == "success"
    ->  (   Nodes = [Root0], Root0 = node(G0, _, _, _), G0 =@= Goal -> Root = Root0
        ;   Root = node(Goal, none, Nodes, false)
        ),
        maplist(bind_var_name, Vs),
        term_variables(Root, Free), name_free(Free, 1),
        nb_setval(skg_tree_nodes, 0),
        tree_json(M, Root, Tree),
        nb_getval(skg_tree_nodes, Count)
    ;   Tree = null, Count = 0
    ),
    nb_getval(skg_depth_cut, DC),
    nb_getval(skg_node_cut, NC),
    Reply = _{ok:true, outcome:Outcome, tree:Tree, node_count:Count, depth_cut:DC, node_cut:NC, output:Output}.

%!  mi(+Ctx, +Goal, +Depth, -Nodes)
%   A meta-interpreter over the session's clauses. Nodes are
%   node(Goal, Rule, Children, Truncated): Rule is a clause reference, or
%   none for built-in, library and tabled predicates (leaves).
mi(_, G, _, _) :- var(G), !, throw(error(instantiation_error, _)).
mi(_, true, _, []) :- !.
mi(Ctx, (A, B), D, Ns) :- !,
    mi(Ctx, A, D, N1), mi(Ctx, B, D, N2), append(N1, N2, Ns).
mi(Ctx, (C -> T ; E), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) -> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ; mi(Ctx, E, D, Ns) ).
mi(Ctx, (C *-> T ; E), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) *-> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ; mi(Ctx, E, D, Ns) ).
mi(Ctx, (A ; B), D, Ns) :- !,
    (   mi(Ctx, A, D, Ns) ; mi(Ctx, B, D, Ns) ).
mi(Ctx, (C -> T), D, Ns) :- !,
    (   mi(Ctx, C, D, Nc) -> mi(Ctx, T, D, Nt), append(Nc, Nt, Ns) ).
mi(_, !, _, []) :- !.
mi(Ctx, G, D, Ns) :-
    G =.. [call, G0 | Extra], Extra \== [], !,
    (   callable(G0) -> true ; throw(error(type_error(callable, G0), _)) ),
    G0 =.. L0, append(L0, Extra, L1), G1 =.. L1,
    mi(Ctx, G1, D, Ns).
mi(Ctx, call(G), D, Ns) :- !,
    mi(Ctx, G, D, Ns).
mi(Ctx, G, D, Ns) :-
    Ctx = ctx(M, MaxD, MaxN),
    nb_getval(skg_nodes, K),
    (   K >= MaxN
    ->  nb_setval(skg_node_cut, true),
        call(M:G),
        Ns = []
    ;   K1 is K + 1,
        nb_setval(skg_nodes, K1),
        (   G \= _:_, local_predicate(M, G), \+ predicate_property(M:G, tabled)
        ->  (   D > MaxD
            ->  nb_setval(skg_depth_cut, true),
                call(M:G),
                Ns = [node(G, none, [], true)]
            ;   D1 is D + 1,
                mi_clause(Ctx, G, D1, Ref, Children),
                Ns = [node(G, Ref, Children, false)]
            )
        ;   call(M:G),
            Ns = [node(G, none, [], false)]
        )
    ).

mi_clause(Ctx, G, D, Ref, Children) :-
    Ctx = ctx(M, _, _),
    clause(M:G, Body, Ref),
    (   split_cut(Body, Pre, Post)
    ->  mi(Ctx, Pre, D, C1), !,
        mi(Ctx, Post, D, C2),
        append(C1, C2, Children)
    ;   mi(Ctx, Body, D, Children)
    ).

split_cut(!, true, true) :- !.
split_cut((!, B), true, B) :- !.
split_cut((A, B), (A, P), Q) :- split_cut(B, P, Q).

tree_json(M, node(G, Ref, Children, Trunc), _{goal:GS, rule:Rule, children:JC, truncated:Trunc}) :-
    nb_getval(skg_tree_nodes, K), K1 is K + 1, nb_setval(skg_tree_nodes, K1),
    format(string(GS0), "~W", [G, [quoted(true), numbervars(true), module(M), max_depth(30), portray(false)]]),
    cap_string(GS0, 2000, GS),
    (   Ref == none -> Rule = null ; clause_text(M, Ref, Rule) ),
    maplist(tree_json(M), Children, JC).

% ---------------------------------------------------------------- tests (run side)

tests_request(M, Req, Reply) :-
    retractall(msg(_, _, _, _, _, _)),
    (   get_dict(text, Req, Text)
    ->  load_text(M, Text, _)
    ;   true
    ),
    take_messages(Msgs),
    get_time(T0),
    Deadline is T0 + Req.time_limit,
    findall(U-Seq, test_case(U, Seq, _, _, _, _, _), Keys0),
    sort(2, @<, Keys0, Keys),
    catch(run_tests_(M, Req.id, Keys, Deadline, Results), skg_cancelled, Results = []),
    kb_clauses(M, K),
    Reply = _{ok:true, results:Results, messages:Msgs, kb_clauses:K, kb_modified:true}.

run_tests_(_, _, [], _, []).
run_tests_(M, Id, [U-Seq|T], Deadline, [R|Rs]) :-
    (   test_case(U, Seq, Name, Opts, Body, Line, _)
    ->  format(string(NameS), "~w", [Name]),
        ( unit_options(U, UO0) -> options_list(UO0, UO) ; UO = [] ),
        run_test(M, Id, UO, Opts, Body, Deadline, Status, Msg),
        atom_string(U, US),
        R = _{unit:US, test:NameS, status:Status, message:Msg, line:Line}
    ;   R = _{unit:"", test:"", status:"skipped", message:"removed", line:0}
    ),
    run_tests_(M, Id, T, Deadline, Rs).

options_list(O, L) :- is_list(O), !, L = O.
options_list(O, [O]).

run_test(M, Id, UnitOpts, Opts0, Body, Deadline, Status, Msg) :-
    options_list(Opts0, Opts),
    get_time(Now),
    Left is Deadline - Now,
    (   member(blocked(R), UnitOpts) -> Status = "skipped", format(string(Msg), "unit blocked: ~w", [R])
    ;   member(blocked(R), Opts) -> Status = "skipped", format(string(Msg), "blocked: ~w", [R])
    ;   member(fixme(R), Opts) -> Status = "skipped", format(string(Msg), "fixme: ~w", [R])
    ;   Left =< 0 -> Status = "skipped", Msg = "no time left (run_tests time_limit)"
    ;   catch(test_goals_safe(M, UnitOpts, Opts, Body), E, true), nonvar(E)
    ->  Status = "failed", error_message(E, Msg)
    ;   ( member(condition(C), UnitOpts) ; member(condition(C), Opts) ),
        client_call(Id, Left, \+ client_catch(once(M:C), _, fail), E0),
        ( var(E0) -> true ; E0 == skg_cancelled -> throw(E0) ; true )
    ->  Status = "skipped", Msg = "condition is false"
    ;   member(timeout(TO), Opts), number(TO), TO < Left
    ->  run_checked(M, Id, Opts, Body, TO, Status, Msg)
    ;   run_checked(M, Id, Opts, Body, Left, Status, Msg)
    ).

test_goals_safe(M, UnitOpts, Opts, Body) :-
    findall(O, ( member(O, UnitOpts) ; member(O, Opts) ), OptList),
    maplist(option_goal, OptList, Gs),
    foldl(conj, Gs, Body, Conj),
    library_policy(Conj),
    safe_goal(M:Conj).

conj(G, A, (G, A)).

option_goal(setup(G), G) :- !.
option_goal(cleanup(G), G) :- !.
option_goal(condition(G), G) :- !.
option_goal(true(G), G) :- !.
option_goal(O, O) :- comparison(O), !.
option_goal(all(C), C) :- comparison(C), !.
option_goal(set(C), C) :- comparison(C), !.
option_goal(_, true).

comparison(C) :- compound(C), compound_name_arity(C, N, 2), memberchk(N, [==, =, =@=, =:=, \==, \=, =\=, <, >, =<, >=, @<, @>, @=<, @>=]).

run_checked(M, Id, Opts, Body, Limit, Status, Msg) :-
    (   member(O, Opts), \+ known_option(O)
    ->  Status = "failed", format(string(Msg), "unsupported test option ~q", [O])
    ;   client_call(Id, Limit, run_expect(M, Opts, Body, Status, Msg), E),
        (   var(E) -> true
        ;   E == skg_limit(time) -> Status = "failed", Msg = "time limit exceeded"
        ;   E == skg_limit(inference) -> Status = "failed", Msg = "a cleanup ran out of its inference budget"
        ;   E == skg_cancelled -> throw(E)
        ;   Status = "failed", error_message(E, Msg0), string_concat("error: ", Msg0, Msg)
        )
    ).

%!  client_catch(:Goal, ?Catcher, :Recovery)
%   catch/3 around client code in the harness: the request's stop balls pass.
:- meta_predicate client_catch(0, ?, 0).
client_catch(G, C, R) :-
    catch(G, E, ( skg_guard:stop_ball(E) -> throw(E) ; E = C -> call(R) ; throw(E) )).

known_option(O) :- comparison(O), !.
known_option(O) :- memberchk(O, [true, fail, false, nondet, det]), !.
known_option(O) :- compound(O), compound_name_arity(O, N, 1),
    memberchk(N, [true, throws, error, all, set, blocked, fixme, condition, setup, cleanup, timeout, occurs_check]).

run_expect(M, Opts, Body, Status, Msg) :-
    ( member(setup(S), Opts) -> Setup = S ; Setup = true ),
    ( member(cleanup(Cl), Opts) -> Cleanup = Cl ; Cleanup = true ),
    (   client_catch(once(M:Setup), E, ( error_message(E, EM), format(string(SetupErr), "setup raised: ~w", [EM]) ))
    ->  (   nonvar(SetupErr) -> Status = "failed", Msg = SetupErr
        ;   client_catch(expect(M, Opts, Body, Status, Msg), E2, ( client_catch(once(M:Cleanup), _, true), throw(E2) )),
            client_catch(once(M:Cleanup), _, true)
        )
    ;   Status = "failed", Msg = "setup failed"
    ).

expect(M, Opts, Body, Status, Msg) :-
    (   ( memberchk(fail, Opts) ; memberchk(false, Opts) )
    ->  ( \+ M:Body -> pass(Status, Msg) ; fail_msg("the test succeeded, but it should fail", Status, Msg) )
    ;   ( member(throws(Exp), Opts) -> true ; member(error(F), Opts), Exp = error(F, _) )
    ->  client_catch(( once(M:Body) -> Got = none ; Got = failed ), Ex, Got = thrown(Ex)),
        (   Got = thrown(Ex), subsumes_term(Exp, Ex) -> pass(Status, Msg)
        ;   Got = thrown(Ex) -> format(string(Msg), "wrong exception: expected ~q, got ~q", [Exp, Ex]), Status = "failed"
        ;   format(string(Msg), "no exception: expected ~q", [Exp]), Status = "failed"
        )
    ;   ( member(all(C), Opts), AllSet = all ; member(set(C), Opts), AllSet = set )
    ->  C =.. [Cmp, Templ, Expected],
        findall(Templ, M:Body, Got0),
        ( AllSet == set -> sort(Got0, Got) ; Got = Got0 ),
        G =.. [Cmp, Got, Expected],
        (   client_catch(M:G, _, fail) -> pass(Status, Msg)
        ;   format(string(Msg), "~w: got ~q, expected ~q", [AllSet, Got, Expected]), Status = "failed"
        )
    ;   (   once(M:Body)
        ->  findall(Cond, ( member(O, Opts), ( O = true(Cond) ; comparison(O), Cond = O ) ), Conds),
            (   member(Cond, Conds), \+ client_catch(M:Cond, _, fail)
            ->  format(string(Msg), "the test succeeded but ~q does not hold", [Cond]), Status = "failed"
            ;   pass(Status, Msg)
            )
        ;   fail_msg("the test body failed", Status, Msg)
        )
    ).

pass("passed", "").
fail_msg(M, "failed", M).