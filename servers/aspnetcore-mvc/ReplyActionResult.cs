using Microsoft.AspNetCore.Mvc;
using Serverlab.Contract;

namespace Serverlab.AspNetCoreMvc;

/// <summary>
/// An action's result: the contract's <see cref="Reply"/> written as bytes with the
/// exact Content-Type and an exact Content-Length, so Kestrel never chunks it. No
/// output formatter or content negotiation is involved, and it is not a client-error
/// result, so [ApiController] never turns a 400 into ProblemDetails. Date (and
/// Server) are Kestrel's.
/// </summary>
internal sealed class ReplyActionResult(Reply reply) : IActionResult
{
    public Task ExecuteResultAsync(ActionContext context)
    {
        HttpResponse response = context.HttpContext.Response;
        response.StatusCode = reply.Status;
        // Set as a string, the header goes out verbatim: "text/plain; charset=utf-8".
        response.ContentType = Reply.ContentType;
        response.ContentLength = reply.Body.Length;
        if (HttpMethods.IsHead(context.HttpContext.Request.Method))
        {
            return Task.CompletedTask; // GET's status and headers, Content-Length included; no body
        }
        ValueTask write = response.Body.WriteAsync(reply.Body);
        return write.IsCompletedSuccessfully ? Task.CompletedTask : write.AsTask();
    }
}
