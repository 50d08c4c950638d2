% SymbolKG Prolog session harness (symbolkg.solvers.prolog.session): see the Python module docstring.
:- module(skg_session, []).
:- use_module(library(http/json)).
:- use_module(library(sandbox)).
:- use_module(library(time)).
:- use_module(library(solution_sequences)).
:- use_module(library(error)).
:- use_module(library(lists)).
:- use_module(library(apply)).
:- use_module(library(listing)).
:- use_module(library(prolog_stream)).
:- use_module(library(aggregate)).
:- use_module(library(pairs)).
:- use_module(library(readutil)).
:- use_module(library(process), [process_kill/2]).   % for client_gone/0 only; never visible to sessions
:- use_module(session_guard, []).                    % imported by each session module (install_guards/1)

% Output of goals goes to a per-request capture stream, so writing to the
% current output is as harmless as writeln/1, which the sandbox allows.
:- include(policy).
% While one clause body is checked at load time, calls to predicates of the
% session module count as safe: each body is checked one level deep (the
% bodies of those predicates are checked on their own). Only the thread doing
% that check sees checking_module/1.
:- multifile sandbox:safe_meta/2.
sandbox:safe_meta(M:G, []) :-
    checking_module(M), callable(G), local_predicate(M, G).

:- thread_local checking_module/1, extra_local/2, msg/6, answer/2, out_chunk/1, body_check/3,
    current_unit/2, undefined_seen/1.
:- dynamic limit_flag/2, session_module/1, pred_seq/3, display/2, directive_src/2, declared_dynamic/2,
    test_case/7, unit_options/2, current_exec/2, pending_cancel/1, last_done/1.

allowed_library(L) :- pure_library(L).
allowed_library(nb_set).
allowed_library(rbtrees).
allowed_library(random).
allowed_library(dcg/basics).
allowed_library(dcg/high_order).

% ---------------------------------------------------------------- protocol

main :-
    prompt(_, ''),
    set_prolog_flag(autoload, true),       % a state built with -c has it off
    set_prolog_flag(on_error, print),
    set_stream(user_input, encoding(utf8)),
    set_stream(user_input, newline(posix)),
    set_stream(user_output, encoding(utf8)),
    set_stream(user_output, newline(posix)),
    stream_property(In, alias(user_input)),
    stream_property(Out, alias(user_output)),
    current_prolog_flag(version, V),
    reply(Out, _{id:0, ok:true, ready:true, version:V}),
    thread_create(runner(Out), _, [alias(skg_runner)]),
    assertz(last_done(0)),
    read_loop(In).

% The reader: requests go to the runner; a cancel line is handled here, while
% the runner waits for the request it is about to stop.
read_loop(In) :-
    repeat,
    read_line_to_string(In, Line),
    (   Line == end_of_file
    ->  client_gone
    ;   catch(read_request(In, Line, Req), E, protocol_error(E)),
        dispatch(Req),
        fail
    ).

% Our client closed our input or died: so do we. The working directory is
% the session's own (empty) one; remove it, as nobody else may be left to.
% Exit at once, without cleanup (there is nothing to save): halt(0) waits
% for the other threads to stop, and a request thread in a tight loop, or
% one the runner is just starting, may never do so; halt(abort) runs the
% crash handler, which can hang with threads about. SIGKILL cannot.
client_gone :-
    catch(( working_directory(D, D), delete_directory(D) ), _, true),
    current_prolog_flag(pid, Pid),
    catch(process_kill(Pid, kill), _, true),
    halt(abort).

protocol_error(E) :-
    print_message(error, E),
    halt(2).

read_request(In, Line, Req) :-
    atom_json_dict(Line, Req0, [value_string_as(string)]),
    (   get_dict(raw, Req0, Raw)
    ->  read_raw(Raw, In, Req0, Req)
    ;   Req = Req0
    ).

read_raw([], _, Req, Req).
read_raw([[Name, Len]|T], In, Req0, Req) :-
    atom_string(Key, Name),
    (   Len =:= 0 -> S = "" ; read_string(In, Len, S) ),
    put_dict(Key, Req0, S, Req1),
    read_raw(T, In, Req1, Req).

dispatch(Req) :-
    Req.op == "cancel", !,
    cancel_request(Req.target).
dispatch(Req) :-
    thread_send_message(skg_runner, req(Req)).

cancel_request(Id) :-
    with_mutex(skg_exec,
        (   current_exec(Id, Tid)
        ->  catch(thread_signal(Tid, skg_session:cancel_signal), _, true)
        ;   last_done(Done), Id > Done
        ->  assertz(pending_cancel(Id))
        ;   true
        )).

cancel_signal :-
    (   nb_current(skg_cancellable, true)
    ->  throw(skg_cancelled)
    ;   nb_setval(skg_cancel_pending, true)
    ).

% ---------------------------------------------------------------- limits
%
% The time limit of a request is enforced from outside its thread: the runner
% (watch/4) signals the request's thread at the deadline with limit_signal/1,
% which throws skg_limit(time), and signals it again every ?RESIGNAL_S seconds
% until the thread leaves the client's code, so that a signal swallowed by
% library code (which may catch anything) is followed by another. No client
% catcher sees the ball (session_guard.pl: the session module's catch/3 and
% cleanup predicates), so the goal stops within a signal round trip, or, when
% it is inside the cleanup of a cut (signals blocked), within that cleanup's
% inference budget. The depth limit is call_with_depth_limit/3 (a failure,
% not an exception: nothing to catch; a nested call cannot lift it).

resignal_s(0.1).

%!  client_call(+Id, +TimeLimit, :Goal, -Ball)
%   Runs Goal (client code) once, under the time limit and cancellation of
%   request Id. Ball is unbound, or the exception that ended it (a stop ball:
%   skg_limit(time), skg_limit(inference), skg_cancelled; or the goal's own).
%   The flags that let limit_signal/1 and cancel_signal/0 throw are on only
%   between the setup and the cleanup below, which SWI-Prolog runs with
%   signals blocked: no stop ball is thrown into the harness's own code.
client_call(Id, Limit, Goal, Ball) :-
    nb_setval(skg_deferred, []),
    catch(setup_call_cleanup(client_enter(Id, Limit),
                             catch(once(Goal), E, ( skg_guard:run_deferred_unless_stop(E), throw(E) )),
                             client_leave(Id)),
          Ball, true).

client_enter(Id, Limit) :-
    with_mutex(skg_exec,
        (   (   retract(pending_cancel(Id)) ; nb_current(skg_cancel_pending, true) )
        ->  Cancel = true
        ;   nb_setval(skg_cancellable, true)
        )),
    (   Cancel == true -> throw(skg_cancelled) ; true ),
    flag(skg_arm_gen, Gen0, Gen0 + 1),
    Gen is Gen0 + 1,
    nb_setval(skg_armed, Gen),
    get_time(Now),
    Deadline is Now + Limit,
    thread_send_message(skg_runner, skg_ev(Id, arm(Gen, Deadline))).

client_leave(Id) :-
    nb_setval(skg_cancellable, false),
    nb_setval(skg_armed, none),
    thread_send_message(skg_runner, skg_ev(Id, disarm)).

limit_signal(Gen) :-
    (   nb_current(skg_armed, Gen), nb_current(skg_cancellable, true)
    ->  throw(skg_limit(time))
    ;   true
    ).

%!  watch(+Runner, +Id, +Tid, +State)
%   The runner's side: waits for the request thread Tid to exit, signalling it
%   when its armed deadline passes. State is idle or armed(Gen, Deadline).
watch(Me, Id, Tid, State) :-
    (   State = armed(_, Deadline)
    ->  get_time(Now), Wait is max(0, Deadline - Now), Options = [timeout(Wait)]
    ;   Options = []
    ),
    (   thread_get_message(Me, skg_ev(Id, Event), Options)
    ->  (   Event == exited
        ->  true
        ;   Event = arm(Gen, D)
        ->  watch(Me, Id, Tid, armed(Gen, D))
        ;   watch(Me, Id, Tid, idle)
        )
    ;   State = armed(Gen, _),
        catch(thread_signal(Tid, skg_session:limit_signal(Gen)), _, true),
        get_time(Now2),
        resignal_s(Every),
        Next is Now2 + Every,
        watch(Me, Id, Tid, armed(Gen, Next))
    ).

exec_exited(Runner, Id) :-
    thread_send_message(Runner, skg_ev(Id, exited)).

runner(Out) :-
    thread_self(Me),
    repeat,
    thread_get_message(Me, req(Req)),
    serve(Me, Req, Reply),
    catch(reply(Out, Reply), E, reply_error(Out, Req, E)),
    fail.

reply_error(Out, Req, E) :-
    error_dict(E, Err),
    catch(reply(Out, _{id:Req.id, ok:false, error:Err}), _, halt(3)).

serve(Me, Req, Reply) :-
    Id = Req.id,
    (   limit_flag(stack_limit, Bytes) -> true ; current_prolog_flag(stack_limit, Bytes) ),
    with_mutex(skg_exec,
        (   thread_create(exec(Me, Req), Tid, [stack_limit(Bytes), at_exit(exec_exited(Me, Id))]),
            assertz(current_exec(Id, Tid))
        )),
    watch(Me, Id, Tid, idle),
    thread_join(Tid, Status),
    forall(thread_get_message(Me, skg_ev(Id, _), [timeout(0)]), true),
    with_mutex(skg_exec,
        (   retractall(current_exec(Id, _)),
            retractall(pending_cancel(Id)),
            retractall(last_done(_)),
            assertz(last_done(Id))
        )),
    (   thread_get_message(Me, skg_reply(Reply0), [timeout(0)])
    ->  true
    ;   Status = exception('$aborted')
    ->  Reply0 = _{ok:false, error:_{kind:"execution_exception", message:"the goal called abort/0 (the session is intact)", prolog_term:"'$aborted'"}}
    ;   format(string(Msg), "internal: the request thread ended with ~q", [Status]),
        Reply0 = _{ok:false, error:_{kind:"execution_exception", message:Msg, prolog_term:null}}
    ),
    put_dict(id, Reply0, Id, Reply).

reply(Out, Dict) :-
    json_write_dict(Out, Dict, [width(0)]),
    nl(Out),
    flush_output(Out).

exec(Parent, Req) :-
    open_string("", Empty),
    set_input(Empty),                      % client code never sees the protocol's input
    nb_setval(skg_cancellable, false),
    nb_setval(skg_cancel_pending, false),
    forall(limit_flag(Flag, Value), catch(set_prolog_flag(Flag, Value), _, true)),
    catch(( handle(Req, Reply) -> true ; Reply = _{ok:false, error:_{kind:"execution_exception", message:"internal: the request failed", prolog_term:null}} ),
          E,
          ( error_dict(E, Err), Reply = _{ok:false, error:Err} )),
    thread_send_message(Parent, skg_reply(Reply)).

sm(M) :- session_module(M), !.
sm(_) :- throw(skg_error(execution_exception, "internal: the session module is not set", none)).

% ---------------------------------------------------------------- requests

handle(Req, Reply) :-
    atom_string(Op, Req.op),
    op_reply(Op, Req, Reply).

op_reply(ping, _, _{ok:true}) :- !.
op_reply(init, Req, _{ok:true, module:M}) :- !,
    atom_string(M, Req.module),
    (   session_module(_)
    ->  throw(skg_error(bad_argument, "the session module is already set", none))
    ;   current_module(M)
    ->  throw(skg_error(bad_argument, "the module name is in use by a library", none))
    ;   true
    ),
    set_module(M:class(user)),
    set_module(M:base(system)),
    skg_guard:install_guards(M),           % catch/3 & co. that cannot swallow the request's limits
    % Prolog flags are per thread: every request thread gets these (serve/3, exec/2).
    (   get_dict(table_space, Req, TS), integer(TS), TS > 0 -> assertz(limit_flag(table_space, TS)) ; true ),
    (   get_dict(stack_limit, Req, SL), integer(SL), SL > 0 -> assertz(limit_flag(stack_limit, SL)) ; true ),
    assertz(session_module(M)).
op_reply(consult, Req, Reply) :- !,
    sm(M),
    wipe(M),
    load_reply(M, Req, Reply).
op_reply(add, Req, Reply) :- !,
    sm(M),
    load_reply(M, Req, Reply).
op_reply(replace, Req, Reply) :- !,
    sm(M),
    replace(M, Req, Reply).
op_reply(run, Req, Reply) :- !,
    sm(M),
    run(M, Req, Reply).
op_reply(trace, Req, Reply) :- !,
    sm(M),
    trace_request(M, Req, Reply).
op_reply(inspect, Req, Reply) :- !,
    sm(M),
    inspect(M, Req, Reply).
op_reply(source, _, Reply) :- !,
    sm(M),
    source(M, Text),
    kb_clauses(M, N),
    Reply = _{ok:true, source_text:Text, clause_count:N, kb_clauses:N}.
op_reply(tests, Req, Reply) :- !,
    sm(M),
    tests_request(M, Req, Reply).
op_reply(Op, _, _) :-
    format(string(Msg), "unknown request ~q", [Op]),
    throw(skg_error(bad_argument, Msg, none)).

% ---------------------------------------------------------------- the rest of the harness

:- include(session_load).
:- include(session_goals).
:- include(session_tools).
