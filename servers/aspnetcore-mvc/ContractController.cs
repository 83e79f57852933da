using Microsoft.AspNetCore.Mvc;
using Serverlab.Contract;

namespace Serverlab.AspNetCoreMvc;

/// <summary>
/// Both routes of the contract as attribute-routed actions, GET and HEAD each.
/// </summary>
/// <remarks>
/// Tuning: [HttpGet] and [HttpHead] on each action. Routing does not answer HEAD
/// for a GET-only action (it gives 405 with Allow: GET); with both, any other
/// method on these paths gets routing's own 405 with Allow: GET, HEAD.
/// The actions bind no parameters: model binding keeps one value of a repeated
/// name and cannot say "given twice is 400", so the raw query string goes to the
/// shared library, which answers with the contract's exact bodies. Actions return
/// a ReplyActionResult: the bytes with an exact Content-Length, no output
/// formatter, no content negotiation.
/// </remarks>
[ApiController]
public sealed class ContractController(Routes routes) : ControllerBase
{
    /// <summary><c>GET /</c>: hello, or n kilobytes of 'X', or the n 400.</summary>
    [HttpGet(Routes.RootPath)]
    [HttpHead(Routes.RootPath)]
    public IActionResult Root() => new ReplyActionResult(routes.Root(RawQuery()));

    /// <summary><c>GET /workday</c>: the trading day of <c>at</c> or of now, or the at 400.</summary>
    [HttpGet(Routes.WorkdayPath)]
    [HttpHead(Routes.WorkdayPath)]
    public IActionResult Workday() => new ReplyActionResult(routes.Workday(RawQuery()));

    /// <summary>The query string as sent on the wire (Kestrel keeps it percent-encoded), without the '?'.</summary>
    private ReadOnlySpan<char> RawQuery() =>
        Request.QueryString.Value is { Length: > 0 } query ? query.AsSpan(1) : [];
}
