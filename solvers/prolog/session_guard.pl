% SymbolKG Prolog session harness: the guards that keep a request's limits out of the client's reach.
%
% Every session module imports these predicates in place of SWI-Prolog's own
% (install_guards/1, called when the session module is made), so every call
% of catch/3 & co. from client code (its clauses, its goals, closures it passes
% to library meta-predicates, which are qualified with the session module)
% runs the definitions below. What they guarantee:
%
%   * a stop ball (stop_ball/1: skg_limit(time), skg_limit(inference),
%     skg_cancelled, '$aborted', inference_limit_exceeded) is never unified
%     with a client's catcher and never runs a client's recovery goal: catch/3
%     and catch_with_backtrace/3 rethrow it at once;
%   * client cleanup goals (setup_call_cleanup/3, setup_call_catcher_cleanup/4,
%     call_cleanup/2,3) never run while a stop ball unwinds the stack, and run
%     where a stop signal can reach them: SWI-Prolog runs Setup and Cleanup with
%     signals blocked, and a Cleanup that runs while an exception unwinds cannot
%     even be stopped by call_with_inference_limit/3. So Setup runs as once/1
%     before the call; Cleanup after a deterministic exit or a failure runs
%     right after it, in normal mode; Cleanup of an exception is deferred to
%     the first catch/3 (of the client or of the harness) that the exception
%     reaches, before that catch's recovery (run_deferred/0); only the Cleanup
%     of a cut runs in place, with signals blocked, and is bounded by
%     ?ATOMIC_INFERENCES inferences (beyond that: skg_limit(inference));
%   * call_with_depth_limit/3 cannot lift the request's depth limit: a nested
%     call gets at most the depth the request has left.
%
% The sandbox sees these definitions as what they are (safe_meta/2 below) and
% refuses, through safe_meta/3, calls of the originals from any module other
% than a session module: system:catch(G, _, R), apply:maplist(catch(G, _), [R])
% and the like would run SWI-Prolog's catch/3, so they are not allowed.
:- module(skg_guard, [ catch/3, catch_with_backtrace/3, setup_call_cleanup/3,
                       setup_call_catcher_cleanup/4, call_cleanup/2, call_cleanup/3,
                       call_with_depth_limit/3 ]).
:- use_module(library(sandbox)).
:- use_module(library(lists)).

:- redefine_system_predicate(catch(_, _, _)).
:- redefine_system_predicate(catch_with_backtrace(_, _, _)).
:- redefine_system_predicate(setup_call_cleanup(_, _, _)).
:- redefine_system_predicate(setup_call_catcher_cleanup(_, _, _, _)).
:- redefine_system_predicate(call_cleanup(_, _)).
:- redefine_system_predicate(call_cleanup(_, _, _)).
:- redefine_system_predicate(call_with_depth_limit(_, _, _)).

:- meta_predicate
    catch(0, ?, 0),
    catch_with_backtrace(0, ?, 0),
    setup_call_cleanup(0, 0, 0),
    setup_call_catcher_cleanup(0, 0, ?, 0),
    call_cleanup(0, 0),
    call_cleanup(0, ?, 0),
    call_with_depth_limit(0, +, -).

%!  guarded(?Name, ?Arity)
%   The predicates the session modules get from here.
guarded(catch, 3).
guarded(catch_with_backtrace, 3).
guarded(setup_call_cleanup, 3).
guarded(setup_call_catcher_cleanup, 4).
guarded(call_cleanup, 2).
guarded(call_cleanup, 3).
guarded(call_with_depth_limit, 3).

%!  atomic_inferences(-N)
%   Inferences allowed to the cleanup of a cut, which runs with signals blocked.
atomic_inferences(2000000).

%!  install_guards(+Module)
%   Makes Module (a fresh session module) call the predicates of this module.
install_guards(M) :-
    forall(guarded(N, A),
           (   functor(H, N, A),
               redefine_system_predicate(M:H),
               M:import(skg_guard:N/A)
           )).

%!  stop_ball(@Ball)
%   Balls that stop a request; no client code may catch them.
stop_ball(B) :- var(B), !, fail.
stop_ball(skg_limit(_)).
stop_ball(skg_cancelled).
stop_ball('$aborted').
stop_ball(inference_limit_exceeded).

% ---------------------------------------------------------------- catch

catch(G, C, R) :-
    system:catch(G, E, skg_guard:recover(E, C, R)).

catch_with_backtrace(G, C, R) :-
    system:catch(G, E, skg_guard:recover(E, C, R)).

recover(E, _, _) :-
    stop_ball(E), !,
    throw(E).
recover(E, C, R) :-
    run_deferred,
    (   E = C
    ->  call(R)
    ;   throw(E)
    ).

% ---------------------------------------------------------------- cleanup

setup_call_cleanup(S, G, C) :-
    setup_call_catcher_cleanup(S, G, _, C).

call_cleanup(G, C) :-
    setup_call_catcher_cleanup(true, G, _, C).

call_cleanup(G, Catcher, C) :-
    setup_call_catcher_cleanup(true, G, Catcher, C).

%   State is state(Port): none until SWI-Prolog reports how G ended, then
%   exit or fail (Cleanup runs here, in normal mode) or done.
setup_call_catcher_cleanup(S, G, Catcher, C) :-
    once(S),
    State = state(none),
    (   system:setup_call_catcher_cleanup(true, G, Port,
                                          skg_guard:cleanup_port(State, Port, Catcher, C)),
        (   arg(1, State, exit)
        ->  nb_setarg(1, State, done),
            run_cleanup(exit, Catcher, C)
        ;   true
        )
    ;   arg(1, State, fail),
        nb_setarg(1, State, done),
        run_cleanup(fail, Catcher, C),
        fail
    ).

cleanup_port(State, Port, Catcher, C) :-
    (   Port == exit
    ->  nb_setarg(1, State, exit)
    ;   Port == fail
    ->  nb_setarg(1, State, fail)
    ;   nb_setarg(1, State, done),
        cleanup_now(Port, Catcher, C)
    ).

cleanup_now(Port, _, _) :-
    Port =.. [_, E],
    stop_ball(E), !.                       % the request is being stopped: no client code
cleanup_now(Port, Catcher, C) :-
    Port =.. [_, _], !,                    % exception(E), external_exception(E)
    (   nb_current(skg_deferred, L0) -> true ; L0 = [] ),
    nb_setval(skg_deferred, [cleanup(Port, Catcher, C)|L0]).
cleanup_now(Port, Catcher, C) :-           % !: signals are blocked here
    atomic_inferences(N),
    call_with_inference_limit(run_cleanup(Port, Catcher, C), N, R),
    (   R == inference_limit_exceeded
    ->  throw(skg_limit(inference))
    ;   true
    ).

run_cleanup(Port, Catcher, C) :-
    (   Catcher = Port
    ->  ignore(C)
    ;   true
    ).

%!  run_deferred
%   Runs the cleanup goals of the frames an exception unwound (innermost
%   first), as SWI-Prolog would have before the catch's recovery. Their
%   exceptions other than stop balls are ignored, as are their failures.
run_deferred :-
    (   nb_current(skg_deferred, L), L \== []
    ->  nb_setval(skg_deferred, []),
        reverse(L, Pending),
        forall(member(cleanup(Port, Catcher, C), Pending),
               system:catch(skg_guard:run_cleanup(Port, Catcher, C), E, skg_guard:rethrow_stop(E)))
    ;   true
    ).

rethrow_stop(E) :-
    (   stop_ball(E) -> throw(E) ; true ).

%!  run_deferred_unless_stop(+Ball)
%   For the harness's own catch around client code.
run_deferred_unless_stop(E) :-
    (   stop_ball(E)
    ->  nb_setval(skg_deferred, [])
    ;   run_deferred
    ).

% ---------------------------------------------------------------- depth

%   skg_depth_abs holds the frame level at which the request's own depth limit
%   cuts; a nested limit that reaches beyond it is cut there, and that counts
%   as the request's limit (skg_depth_hit), not as the client's.
call_with_depth_limit(G, L, R) :-
    (   nb_current(skg_depth_abs, Abs), integer(Abs)
    ->  prolog_current_frame(F),
        prolog_frame_attribute(F, level, Level),
        Left is Abs - Level,
        (   L =< Left
        ->  system:call_with_depth_limit(G, L, R)
        ;   Left < 1
        ->  nb_setval(skg_depth_hit, true),
            fail
        ;   system:call_with_depth_limit(G, Left, R0),
            (   R0 == depth_limit_exceeded
            ->  nb_setval(skg_depth_hit, true),
                fail
            ;   R = R0
            )
        )
    ;   system:call_with_depth_limit(G, L, R)
    ).

% ---------------------------------------------------------------- sandbox

:- multifile sandbox:safe_meta/2, sandbox:safe_meta/3.

sandbox:safe_meta(skg_guard:catch(G, _, R), [G, R]).
sandbox:safe_meta(skg_guard:catch_with_backtrace(G, _, R), [G, R]).
sandbox:safe_meta(skg_guard:setup_call_cleanup(S, G, C), [S, G, C]).
sandbox:safe_meta(skg_guard:setup_call_catcher_cleanup(S, G, _, C), [S, G, C]).
sandbox:safe_meta(skg_guard:call_cleanup(G, C), [G, C]).
sandbox:safe_meta(skg_guard:call_cleanup(G, _, C), [G, C]).
sandbox:safe_meta(skg_guard:call_with_depth_limit(G, _, _), [G]).

%   SWI-Prolog's own versions, reached from a module that is not a session
%   module (an explicit qualification such as system:catch/3, or a closure
%   run by a meta-predicate called as lib:maplist(...)), are refused.
sandbox:safe_meta(Goal, Context, _) :-
    strip_module(Goal, _, Plain),
    callable(Plain),
    functor(Plain, N, A),
    guarded(N, A),
    \+ skg_session:session_module(Context),
    format(string(Msg), "refused by the sandbox: ~w/~w may only be called from the session's own code (not qualified with a module, nor in a closure of a meta-call qualified with one), so that nothing can catch the request's time limit", [N, A]),
    throw(skg_error(permission_error, Msg, N/A)).
