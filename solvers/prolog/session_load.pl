% Part of session_harness.pl (module skg_session, included): loading source text.

% ---------------------------------------------------------------- loading

wipe(M) :-
    catch(abolish_all_tables, _, true),
    findall(N/A, local_pi_all(M, N, A), PIs),
    forall(member(N/A, PIs), catch(abolish(M:N/A), _, true)),
    retractall(pred_seq(_, _, _)),
    retractall(display(_, _)),
    retractall(directive_src(_, _)),
    retractall(declared_dynamic(_, _)),
    retractall(test_case(_, _, _, _, _, _, _)),
    retractall(unit_options(_, _)).

% The predicates of the session module; names starting with '$' are
% internals (tabling adds '$tabled'/2, '$wrap$p'/N, ...) and are not listed.
local_pi(M, N, A) :-
    local_pi_all(M, N, A),
    \+ sub_atom(N, 0, _, _, '$').

local_pi_all(M, N, A) :-
    current_predicate(M:N/A),
    functor(H, N, A),
    \+ predicate_property(M:H, imported_from(_)).

local_predicate(M, G) :-
    functor(G, N, A),
    (   extra_local(N, A) -> true
    ;   current_predicate(M:N/A), \+ predicate_property(M:G, imported_from(_))
    ).

load_reply(M, Req, Reply) :-
    load_text(M, Req.text, Count),
    take_messages(Msgs),
    kb_clauses(M, K),
    Reply0 = _{ok:true, messages:Msgs, clause_count:Count, kb_clauses:K},
    (   Req.get(include_predicates) == true
    ->  predicate_list(M, Ps), put_dict(predicates, Reply0, Ps, Reply)
    ;   Reply = Reply0
    ).

kb_clauses(M, N) :-
    aggregate_all(sum(C), (local_pi(M, Nm, A), functor(H, Nm, A), predicate_property(M:H, number_of_clauses(C))), N).

predicate_list(M, Ps) :-
    findall(S-Seq, (local_pi(M, N, A), ( pred_seq(N, A, Seq) -> true ; Seq = inf ), format(string(S), "~w/~w", [N, A])), Pairs),
    sort(2, @=<, Pairs, Sorted),
    pairs_keys(Sorted, Ps).

%!  load_text(+M, +Text, -Count)
%   Loads the terms of Text into M one by one. Never throws for a bad term:
%   every problem becomes a message (msg/6).
load_text(M, Text, Count) :-
    retractall(body_check(_, _, _)),
    retractall(current_unit(_, _)),
    retractall(undefined_seen(_)),
    nb_setval(skg_loaded, 0),
    setup_call_cleanup(open_string(Text, S), load_stream(M, S), close(S)),
    (   current_unit(U, UL)
    ->  format(string(Msg), "begin_tests(~q) has no end_tests(~q)", [U, U]),
        add_msg(error, syntax_error, Msg, UL, 1, none),
        retractall(current_unit(_, _))
    ;   true
    ),
    check_bodies(M),
    nb_getval(skg_loaded, Count).

load_stream(M, S) :-
    nb_setval(skg_last_error_at, -1),
    repeat,
    catch(read_term(S, T, [module(M), syntax_errors(error), term_position(P), variable_names(Vs), singletons(Ss)]), E, true),
    (   nonvar(E)
    ->  read_error(E, S, Stop),
        Stop == true, !
    ;   T == end_of_file
    ->  !
    ;   term_pos(P, L, C),
        singleton_warning(T, Ss, L, C),
        catch(add_term(M, T, Vs, L, C), E2, term_message(E2, L, C)),
        fail
    ).

term_pos(P, L, C) :-
    stream_position_data(line_count, P, L),
    stream_position_data(line_position, P, C0),
    C is C0 + 1.

read_error(E, S, Stop) :-
    E = error(syntax_error(What), Ctx), !,
    (   Ctx = stream(_, L, LP, CharNo) -> C is LP + 1 ; L = 0, C = 0, CharNo = -1 ),
    syntax_text(What, Msg),
    add_msg(error, syntax_error, Msg, L, C, error(syntax_error(What), _)),
    nb_getval(skg_last_error_at, Prev),
    (   ( CharNo == Prev ; CharNo < 0 ; at_end_of_stream(S) ) -> Stop = true ; Stop = false ),
    nb_setval(skg_last_error_at, CharNo).
read_error(E, _, true) :-
    error_kind(E, Kind),
    error_message(E, Msg),
    add_msg(error, Kind, Msg, 0, 0, E).

syntax_text(What, Msg) :-
    (   catch(message_to_codes(error(syntax_error(What), _), Codes), _, fail)
    ->  string_codes(Msg0, Codes)
    ;   format(string(Msg0), "~w", [What])
    ),
    (   sub_string(Msg0, 0, _, _, "Syntax error") -> Msg = Msg0 ; string_concat("Syntax error: ", Msg0, Msg) ).

message_to_codes(E, Codes) :-
    message_lines(E, S),
    string_codes(S, Codes).

singleton_warning(_, [], _, _) :- !.
singleton_warning((:- _), _, _, _) :- !.
singleton_warning(_, Ss, L, C) :-
    findall(N, (member(N=_, Ss), \+ sub_atom(N, 0, _, _, '_')), Names),
    (   Names == []
    ->  true
    ;   atomic_list_concat(Names, ', ', NL),
        format(string(Msg), "Singleton variables: [~w] (a variable used once is usually a typo; write _~w if it is meant)", [NL, NL]),
        add_msg(warning, singleton, Msg, L, C, none)
    ).

add_msg(Sev, Kind, Msg, L, C, Term) :-
    (   aggregate_all(count, msg(_, _, _, _, _, _), N), N >= 500
    ->  true                               % a wall of errors says no more after 500
    ;   assertz(msg(Sev, Kind, Msg, L, C, Term))
    ).

take_messages(Msgs) :-
    findall((L-C)-_{severity:Sev, kind:Kind, message:Msg, line:L, column:C},
            ( retract(msg(Sev0, Kind0, Msg, L, C, _)), atom_string(Sev0, Sev), atom_string(Kind0, Kind) ),
            Keyed),
    keysort(Keyed, Sorted),                % by position; stable, so a term's messages keep their order
    pairs_values(Sorted, Msgs).

term_message(E, L, C) :-
    error_kind(E, Kind),
    error_message(E, Msg),
    add_msg(error, Kind, Msg, L, C, E).

add_term(_, T, _, _, _) :-
    var(T), !,
    throw(skg_error(instantiation_error, "a clause cannot be a variable", none)).
add_term(M, (:- D), Vs, L, C) :- !,
    directive(M, D, Vs, L, C).
add_term(_, (?- _), _, _, _) :- !,
    throw(skg_error(permission_error, "'?- Goal.' lines in source text are not run: call run_goal with the goal", none)).
add_term(_, T, Vs, L, _) :-
    current_unit(U, _),
    test_clause(T, Name, Opts, Body), !,
    add_test(U, Name, Opts, Body, Vs, L).
add_term(M, (H --> B), Vs, L, C) :- !,
    dcg_translate_rule((H --> B), Clause),
    add_clause(M, Clause, Vs, L, C).
add_term(M, T, Vs, L, C) :-
    add_clause(M, T, Vs, L, C).

add_clause(M, Clause, Vs, L, C) :-
    clause_parts(Clause, H, B),
    check_head(M, H),
    (   B == true -> true ; library_policy(B) ),
    catch(assertz(M:Clause, Ref), E, head_error(E)),
    note_predicate(H),
    (   Vs == [] -> true ; store_display(Ref, Clause, Vs) ),
    (   B == true -> true ; assertz(body_check(Ref, L, C)) ),
    nb_getval(skg_loaded, N0),
    N is N0 + 1,
    nb_setval(skg_loaded, N).

clause_parts(Clause, H, B) :-
    (   nonvar(Clause), Clause = (H :- B) -> true ; H = Clause, B = true ).

check_head(_, H) :-
    var(H), !,
    throw(skg_error(instantiation_error, "a clause head cannot be a variable", none)).
check_head(_, Mod:H) :- !,
    format(string(Msg), "clauses may only define predicates of the session module, not of module ~q (~q)", [Mod, Mod:H]),
    throw(skg_error(permission_error, Msg, Mod:H)).
check_head(_, H) :-
    \+ callable(H), !,
    format(string(Msg), "~q cannot be a clause head: it is not an atom or compound term", [H]),
    throw(skg_error(type_error, Msg, H)).
check_head(_, H) :-
    functor(H, N, A),
    pred_seq(N, A, _), !.                  % known: checked when its first clause came
check_head(_, H) :-
    functor(H, N, A),
    (   control(N/A) ; current_predicate(system:N/A) ), !,
    format(string(Msg), "~w/~w is a built-in predicate and cannot be redefined; give your predicate another name", [N, A]),
    throw(skg_error(permission_error, Msg, N/A)).
check_head(_, _).

control((',')/2). control((;)/2). control((->)/2). control((*->)/2). control((\+)/1). control((:-)/1). control((:-)/2).
control((?-)/1). control((!)/0). control(call/_). control((:)/2). control(('|')/2).

head_error(error(permission_error(modify, static_procedure, PI), _)) :- !,
    pi_text(PI, Name),
    format(string(Msg), "~w cannot be redefined (a built-in or imported library predicate); give your predicate another name", [Name]),
    throw(skg_error(permission_error, Msg, PI)).
head_error(E) :-
    throw(E).

note_predicate(H) :-
    functor(H, N, A),
    (   pred_seq(N, A, _)
    ->  true
    ;   flag(skg_seq, Seq, Seq + 1),
        assertz(pred_seq(N, A, Seq))
    ).

store_display(Ref, Clause, Vs) :-
    copy_term(Clause-Vs, Display-Vs2),
    maplist(bind_var_name, Vs2),
    assertz(display(Ref, Display)).

bind_var_name(Name = V) :-
    (   var(V) -> V = '$VAR'(Name) ; true ).

%!  library_policy(+Term)
%   The sandbox lets goals load any library; we allow only pure ones.
library_policy(T) :-
    forall(( sub_term(S, T), compound(S) ), library_ok(S)).

library_ok(use_module(Spec)) :- !, allowed_spec(Spec).
library_ok(use_module(Spec, _)) :- !, allowed_spec(Spec).
library_ok(ensure_loaded(Spec)) :- !, allowed_spec(Spec).
library_ok(load_files(Spec, _)) :- !, allowed_spec(Spec).
library_ok(autoload(Spec)) :- !, allowed_spec(Spec).
library_ok(autoload(Spec, _)) :- !, allowed_spec(Spec).
library_ok(_).

allowed_spec(Spec) :-
    (   nonvar(Spec), Spec = library(L), ground(L), allowed_library(L)
    ->  true
    ;   format(string(Msg), "loading ~q is not allowed: only library(L) for pure libraries L (lists, apply, aggregate, clpfd, ...)", [Spec]),
        throw(skg_error(permission_error, Msg, Spec))
    ).

% Clause bodies are checked with the sandbox after the whole text is loaded
% (so that predicates defined further down are known). A body that calls
% something unsafe is removed; a call of an undefined predicate is a warning.
check_bodies(M) :-
    findall(Ref-L-C, retract(body_check(Ref, L, C)), Checks),
    (   Checks == []
    ->  true
    ;   setup_call_cleanup(assertz(checking_module(M)),
                           forall(member(Ref-L-C, Checks), check_body(M, Ref, L, C)),
                           retractall(checking_module(_)))
    ).

check_body(M, Ref, L, C) :-
    (   catch(clause(M:H, B, Ref), _, fail)
    ->  catch(safe_goal(M:B), E, true),
        (   var(E)
        ->  true
        ;   E = error(existence_error(procedure, G), _)
        ->  undefined_warning(G, L, C)
        ;   E = error(instantiation_error, _)
        ->  add_msg(warning, instantiation_error,
                    "the clause calls a goal held in a variable, which the sandbox cannot check: goals that reach it will be refused", L, C, E)
        ;   erase(Ref),
            retractall(display(Ref, _)),
            forget_if_empty(M, H),
            nb_getval(skg_loaded, N0), N is N0 - 1, nb_setval(skg_loaded, N),
            error_kind(E, Kind),
            error_message(E, Msg0),
            string_concat("clause not loaded: ", Msg0, Msg),
            add_msg(error, Kind, Msg, L, C, E)
        )
    ;   true
    ).

% A predicate whose only clauses were refused is not left behind, empty.
forget_if_empty(M, H) :-
    functor(H, N, A),
    (   \+ clause(M:H, _), \+ declared_dynamic(N, A)
    ->  catch(abolish(M:N/A), _, true),
        retractall(pred_seq(N, A, _))
    ;   true
    ).

undefined_warning(G, L, C) :-
    pi_text(G, Name),
    (   undefined_seen(Name)
    ->  true
    ;   assertz(undefined_seen(Name)),
        format(string(Msg), "~w is called but has no clauses: define it, fix its name or arity, or declare it with ':- dynamic ~w.'", [Name, Name]),
        add_msg(warning, existence_error, Msg, L, C, none)
    ).

% ---------------------------------------------------------------- directives

directive(_, D, _, _, _) :-
    var(D), !,
    throw(skg_error(instantiation_error, "a directive cannot be a variable", none)).
directive(M, dynamic(Specs), _, _, _) :- !,
    pi_specs(Specs, PIs),
    dynamic(M:Specs),
    forall(member(N/A, PIs), ( declared_dynamic(N, A) -> true ; assertz(declared_dynamic(N, A)) )),
    forall(member(N/A, PIs), ( functor(H, N, A), note_predicate(H) )),
    record_directive(dynamic(Specs)).
directive(_, discontiguous(Specs), _, _, _) :- !,
    pi_specs(Specs, _),                    % clauses are added one by one: nothing to do
    record_directive(discontiguous(Specs)).
directive(M, table(Specs), _, _, _) :- !,
    table_specs(Specs),
    table(M:Specs),
    record_directive(table(Specs)).
directive(M, op(P, T, Names), _, _, _) :- !,
    op_directive(M, P, T, Names),
    record_directive(op(P, T, Names)).
directive(M, use_module(Spec), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec),
    record_directive(use_module(Spec)).
directive(M, use_module(Spec, Imports), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec, Imports),
    record_directive(use_module(Spec, Imports)).
directive(M, ensure_loaded(Spec), _, _, _) :- !,
    allowed_spec(Spec),
    M:use_module(Spec),
    record_directive(use_module(Spec)).
directive(_, begin_tests(U), _, L, _) :- !,
    begin_unit(U, [], L).
directive(_, begin_tests(U, Opts), _, L, _) :- !,
    begin_unit(U, Opts, L).
directive(_, end_tests(U), _, _, _) :- !,
    (   retract(current_unit(U, _))
    ->  true
    ;   format(string(Msg), "end_tests(~q) without begin_tests(~q)", [U, U]),
        throw(skg_error(syntax_error, Msg, none))
    ).
directive(_, module(_, _), _, L, C) :- !,
    add_msg(warning, permission_error, "module/2 ignored: the session has a module of its own", L, C, none).
directive(_, style_check(_), _, L, C) :- !,
    add_msg(informational, permission_error, "style_check/1 ignored", L, C, none).
directive(_, set_prolog_flag(F, V), _, _, _) :- !,
    format(string(Msg), "set_prolog_flag(~q, ~q) is not allowed in a session", [F, V]),
    throw(skg_error(permission_error, Msg, set_prolog_flag(F, V))).
directive(_, D, _, _, _) :-
    (   callable(D), functor(D, initialization, _)
    ->  throw(skg_error(permission_error, "initialization directives are not run: call run_goal with the goal", D))
    ;   callable(D)
    ->  functor(D, N, A),
        format(string(Msg), "the directive ~q/~w is not allowed: allowed are dynamic/1, discontiguous/1, table/1, op/3, use_module(library(L)) of pure libraries (lists, apply, aggregate, clpfd, ...) and begin_tests/end_tests; run other goals with run_goal", [N, A]),
        throw(skg_error(permission_error, Msg, D))
    ;   format(string(Msg), "~q is not a directive", [D]),
        throw(skg_error(type_error, Msg, D))
    ).

record_directive(D) :-
    flag(skg_seq, Seq, Seq + 1),
    assertz(directive_src(Seq, D)).

pi_specs(S, _) :- var(S), !, throw(skg_error(instantiation_error, "a predicate indicator cannot be a variable", none)).
pi_specs(S, PIs) :- phrase(pi_list(S), PIs), !.
pi_specs(S, _) :-
    format(string(Msg), "~q is not a list of predicate indicators Name/Arity of the session module", [S]),
    throw(skg_error(type_error, Msg, S)).

pi_list(V) --> { var(V) }, !, { fail }.
pi_list((A, B)) --> !, pi_list(A), pi_list(B).
pi_list([]) --> !.
pi_list([H|T]) --> !, pi_list(H), pi_list(T).
pi_list(N/A) --> { atom(N), integer(A), A >= 0 }, !, [N/A].
pi_list(N//A) --> { atom(N), integer(A), A >= 0 }, !, { A2 is A + 2 }, [N/A2].

table_specs(S) :- var(S), !, throw(skg_error(instantiation_error, "a table specification cannot be a variable", none)).
table_specs((A, B)) :- !, table_specs(A), table_specs(B).
table_specs([]) :- !.
table_specs([H|T]) :- !, table_specs(H), table_specs(T).
table_specs(S as Opts) :- !,
    (   sub_term(X, Opts), X == shared
    ->  throw(skg_error(permission_error, "shared tables are not allowed in a session", S as Opts))
    ;   table_specs(S)
    ).
table_specs(_:_) :- !,
    throw(skg_error(permission_error, "tables may only be declared for predicates of the session module", none)).
table_specs(N/A) :- atom(N), integer(A), !.
table_specs(N//A) :- atom(N), integer(A), !.
table_specs(S) :- callable(S), \+ sub_term(_:_, S), !.   % mode-directed: path(_,_,min)
table_specs(S) :-
    format(string(Msg), "~q is not a table specification", [S]),
    throw(skg_error(type_error, Msg, S)).

op_directive(M, P, T, Names) :-
    (   integer(P), between(0, 1200, P) -> true
    ;   throw(skg_error(type_error, "op/3: the priority must be an integer 0..1200", P)) ),
    (   atom(T), memberchk(T, [xfx, xfy, yfx, fy, fx, xf, yf]) -> true
    ;   throw(skg_error(type_error, "op/3: the type must be one of xfx, xfy, yfx, fy, fx, xf, yf", T)) ),
    (   is_list(Names) -> List = Names ; List = [Names] ),
    forall(member(N, List),
           (   atom(N) -> true
           ;   throw(skg_error(type_error, "op/3: operator names must be atoms of the session module", N)) )),
    forall(member(N, List),
           (   protected_op(N)
           ->  format(string(Msg), "op/3 may not change the operator ~q", [N]),
               throw(skg_error(permission_error, Msg, N))
           ;   true )),
    forall(member(N, List), op(P, T, M:N)).

protected_op((:-)). protected_op((-->)). protected_op((?-)). protected_op((',')). protected_op(('|')).
protected_op((:)). protected_op(('.')). protected_op((dynamic)). protected_op((table)). protected_op((initialization)).

% ---------------------------------------------------------------- tests (load side)

test_clause((H :- B), Name, Opts, B) :- nonvar(H), test_head(H, Name, Opts).
test_clause(H, Name, Opts, true) :- test_head(H, Name, Opts).

test_head(test(Name), Name, []).
test_head(test(Name, Opts), Name, Opts).

begin_unit(U, Opts, L) :-
    (   atom(U) -> true ; throw(skg_error(type_error, "begin_tests/1: the unit name must be an atom", U)) ),
    (   current_unit(Open, _)
    ->  format(string(Msg), "begin_tests(~q) inside the unit ~q: units do not nest", [U, Open]),
        throw(skg_error(syntax_error, Msg, none))
    ;   true
    ),
    retractall(test_case(U, _, _, _, _, _, _)),
    retractall(unit_options(U, _)),
    assertz(unit_options(U, Opts)),
    assertz(current_unit(U, L)).

add_test(U, Name, Opts, Body, Vs, L) :-
    library_policy(Opts-Body),
    flag(skg_seq, Seq, Seq + 1),
    (   Vs == [] -> Display = test(Name, Opts) - Body
    ;   copy_term(test(Name, Opts)-Body-Vs, Display0-Vs2), maplist(bind_var_name, Vs2), Display = Display0
    ),
    assertz(test_case(U, Seq, Name, Opts, Body, L, Display)).

% ---------------------------------------------------------------- replace

replace(M, Req, Reply) :-
    atom_string(N, Req.name),
    A = Req.arity,
    functor(H, N, A),
    retractall(msg(_, _, _, _, _, _)),
    catch(check_head(M, H), E0, (term_message(E0, 0, 0))),
    (   msg(error, _, _, _, _, _)
    ->  true
    ;   predicate_property(M:H, imported_from(Lib))
    ->  format(string(Msg), "~w/~w is imported from library ~w; it cannot be replaced", [N, A, Lib]),
        add_msg(error, permission_error, Msg, 0, 0, none)
    ;   setup_call_cleanup(open_string(Req.text, S), collect_terms(M, S, Items), close(S)),
        maplist(check_replacement(M, N, A), Items)
    ),
    (   msg(error, _, _, _, _, _)
    ->  take_messages(Msgs),
        kb_clauses(M, K),
        Reply = _{ok:true, replaced:false, clause_count:0, messages:Msgs, kb_clauses:K}
    ;   findall(Old, clause(M:H, _, Old), Olds),
        transaction(( retractall(M:H),
                      forall(member(Old, Olds), retractall(display(Old, _))),
                      forall(member(item(T, Vs, _, _), Items), add_replacement(M, T, Vs)) )),
        ( local_pi(M, N, A) -> true ; dynamic(M:N/A) ),
        note_predicate(H),
        take_messages(Msgs),
        length(Items, Count),
        kb_clauses(M, K),
        Reply = _{ok:true, replaced:true, clause_count:Count, messages:Msgs, kb_clauses:K, kb_modified:true}
    ).

collect_terms(M, S, Items) :-
    nb_setval(skg_last_error_at, -1),
    collect_terms_(M, S, Items).

collect_terms_(M, S, Items) :-
    catch(read_term(S, T, [module(M), syntax_errors(error), term_position(P), variable_names(Vs), singletons(Ss)]), E, true),
    (   nonvar(E)
    ->  read_error(E, S, Stop),
        (   Stop == true -> Items = [] ; collect_terms_(M, S, Items) )
    ;   T == end_of_file
    ->  Items = []
    ;   term_pos(P, L, C),
        singleton_warning(T, Ss, L, C),
        Items = [item(T, Vs, L, C)|Rest],
        collect_terms_(M, S, Rest)
    ).

check_replacement(M, N, A, item(T, _, L, C)) :-
    catch(check_replacement_(M, N, A, T), E, term_message(E, L, C)).

check_replacement_(_, _, _, T) :-
    var(T), !,
    throw(skg_error(instantiation_error, "a clause cannot be a variable", none)).
check_replacement_(_, _, _, (:- _)) :- !,
    throw(skg_error(permission_error, "directives are not allowed in replace_predicate: only clauses of the predicate", none)).
check_replacement_(M, N, A, T0) :-
    (   T0 = (_ --> _) -> dcg_translate_rule(T0, T) ; T = T0 ),
    clause_parts(T, H, B),
    (   var(H) -> throw(skg_error(instantiation_error, "a clause head cannot be a variable", none)) ; true ),
    (   callable(H), functor(H, N, A)
    ->  true
    ;   format(string(Msg), "the clause for ~q is not a clause of ~w/~w: replace_predicate takes only clauses of that predicate", [H, N, A]),
        throw(skg_error(permission_error, Msg, H))
    ),
    (   B == true
    ->  true
    ;   library_policy(B),
        setup_call_cleanup(( assertz(checking_module(M)), assertz(extra_local(N, A)) ),
                           catch(safe_goal(M:B), E, true),
                           ( retractall(checking_module(_)), retractall(extra_local(_, _)) )),
        (   var(E) -> true
        ;   E = error(existence_error(procedure, G), _) -> term_pos_warning(G)
        ;   E = error(instantiation_error, _) -> true
        ;   throw(E)
        )
    ).

term_pos_warning(G) :-
    pi_text(G, Name),
    format(string(Msg), "~w is called but has no clauses", [Name]),
    add_msg(warning, existence_error, Msg, 0, 0, none).

add_replacement(M, T0, Vs) :-
    (   T0 = (_ --> _) -> dcg_translate_rule(T0, T) ; T = T0 ),
    assertz(M:T, Ref),
    (   Vs == [] -> true ; store_display(Ref, T, Vs) ).

